#include "daemon/api/stats.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/version.h"
#include "daemon/api/proto_convert.h"

namespace stoker {
namespace {

// VmRSS of this process (0 if /proc cannot tell).
uint64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    uint64_t kib = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %" SCNu64 " kB", &kib) == 1) {
      return kib * 1024;
    }
  }
  return 0;
}

}  // namespace

void CollectStats(const WorkerPool& pool, const JobRegistry& registry,
                  std::chrono::steady_clock::time_point started,
                  const std::function<bool(const Job&)>& include,
                  v1::Stats* out) {
  v1::DaemonStats* daemon = out->mutable_daemon();
  daemon->set_version(kVersion);
  daemon->set_workers(pool.size());
  daemon->set_uptime_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - started)
                            .count());
  daemon->set_shm_bytes(registry.shm_bytes());
  daemon->set_samples_decoded(pool.samples_decoded());
  daemon->set_decode_errors(pool.decode_errors());
  daemon->set_worker_busy_percent(pool.busy_percent());
  daemon->set_decoded_per_second(pool.decoded_per_second());
  daemon->set_shm_budget_bytes(registry.shm_budget_bytes());
  daemon->set_shm_free_bytes(FreeBytes(registry.options().shm_dir));
  daemon->set_rss_bytes(ResidentBytes());
  const DatasetCache::Usage datasets = registry.dataset_usage();
  daemon->set_dataset_indexes(datasets.indexes);
  daemon->set_dataset_index_bytes(datasets.bytes);
  daemon->set_orphans_reclaimed(registry.orphans_reclaimed());
  if (const ShardCache* cache = registry.options().shard_cache) {
    const ShardCache::Usage usage = cache->usage();
    daemon->set_shard_cache_bytes(usage.bytes);
    daemon->set_shard_cache_max_bytes(usage.max_bytes);
    daemon->set_shard_cache_files(usage.files);
    daemon->set_shard_cache_held_bytes(usage.held_bytes);
    daemon->set_shard_cache_hits(usage.hits);
    daemon->set_shard_cache_misses(usage.misses);
    daemon->set_shard_cache_fetched_bytes(usage.fetched_bytes);
    daemon->set_shard_cache_evictions(usage.evictions);
  }
  for (const auto& job : registry.List()) {
    if (include && !include(*job)) continue;
    CountersToProto(*job, job->Counters(), out->add_jobs());
  }
}

}  // namespace stoker
