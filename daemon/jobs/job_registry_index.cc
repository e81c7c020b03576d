// JobRegistry::Index: a new job's dataset index, shared with the jobs over
// the same local dataset, or made from the shard cache for remote shards.
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/datasets/remote_shards.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/jobs/job_registry.h"
#include "daemon/os/byte_size.h"
#include "daemon/os/file_identity.h"

namespace stoker {

absl::StatusOr<std::shared_ptr<const DatasetIndex>> JobRegistry::IndexRemote(
    const JobConfig& config, const ScanLimits& limits,
    absl::Duration fetch_timeout) {
  // The cache's files are stokerd's own: fetched and opened with its
  // identity, each only after a probe with the job's credentials.
  RemoteShardSource source{.cache = options_.shard_cache,
                           .user = config.owner_uid,
                           .access = config.remote};
  source.fetch.deadline = absl::Now() + fetch_timeout;
  source.fetch.ca_file = options_.remote_ca_file;
  source.fetch.cancelled = limits.cancelled;
  RemoteTally tally;
  const absl::Time start = absl::Now();
  auto index = IndexRemoteShards(config.shards, SchemaOf(config), limits,
                                 source, &tally);
  spdlog::info(
      "remote shards for uid {} on {}: {} shards, {} from the shard cache, {} "
      "fetched ({} requests, {} retries, {} resumed) in {}: {}",
      config.owner_uid, DatasetName(config), tally.shards, tally.hits,
      FormatByteSize(tally.fetch.bytes), tally.fetch.requests,
      tally.fetch.retries, tally.fetch.resumed,
      absl::FormatDuration(
          absl::Trunc(absl::Now() - start, absl::Milliseconds(1))),
      index.ok() ? "indexed" : index.status().message());
  return index;
}

absl::StatusOr<std::shared_ptr<const DatasetIndex>> JobRegistry::Index(
    JobConfig* config, const ScanLimits& limits, absl::Duration fetch_timeout) {
  if (config->remote_shards()) {
    return IndexRemote(*config, limits, fetch_timeout);
  }
  // What the scan opens, it opens with the owner's permissions (the ring
  // Create makes afterwards is the daemon's own).
  const ActAs as_owner(&config->owner_files);
  STOKER_RETURN_IF_ERROR(as_owner.status());
  const PathPolicy& policy = PolicyOf(limits);  // options_.dataset_paths
  if (config->dataset_kind == DatasetKind::kImageFolder) {
    STOKER_ASSIGN_OR_RETURN(config->dataset_path,
                            policy.Resolve(config->dataset_path));
  }
  const std::string key = DatasetKey(*config, policy);
  if (auto shared = datasets_.Find(key, policy);
      shared != nullptr && shared->size() <= limits.max_samples) {
    return shared;
  }
  STOKER_ASSIGN_OR_RETURN(auto index, BuildDatasetIndex(*config, limits));
  return datasets_.Keep(key, std::move(index));
}

}  // namespace stoker
