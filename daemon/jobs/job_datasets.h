// JobDatasets: a new job's dataset, through its source
// (daemon/datasets/dataset_source.h): an index, shared with the jobs over
// the same data while it holds, or for a streamed job its shard table and
// the store its windows are fetched with.
//
// Thread-safety: thread-safe; Make() does file-system and network I/O and
// may take long (call it off the gRPC callback threads).
#ifndef STOKER_DAEMON_JOBS_JOB_DATASETS_H_
#define STOKER_DAEMON_JOBS_JOB_DATASETS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/datasets/dataset_cache.h"
#include "daemon/datasets/remote_shards.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/datasets/streamed_shards.h"
#include "daemon/remote/object_store.h"
#include "daemon/remote/shard_cache.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// A job's dataset: its index, or a streamed job's shards.
struct JobDataset {
  std::shared_ptr<const DatasetIndex> index;
  std::shared_ptr<const StreamedShards> streamed;

  // What admission counts (admission.h): the index (or shard table) as a
  // key and its bytes, and a streamed job's two windows in the cache.
  const void* key() const;
  uint64_t memory_bytes() const;
};

// The shard cache room a streamed job's two windows of its largest shards
// take at most.
uint64_t StreamRoom(const JobConfig& config, const ShardTable& table);

struct JobDatasetsOptions {
  // Where remote shards are kept; must outlive this (nullptr: no remote
  // shards).
  ShardCache* shard_cache = nullptr;
  std::string remote_ca_file;  // "": the system's certificates
  // The store a job's remote shards are read from, made with its access
  // (empty: HttpStore).
  std::function<std::unique_ptr<ObjectStore>(const FetchAccess&)> object_store;
};

class JobDatasets {
 public:
  explicit JobDatasets(JobDatasetsOptions options)
      : options_(std::move(options)) {}

  // The dataset of config's job (resolving config->dataset_path, and
  // setting config->streaming for remote shards): local data as the job's
  // owner; remote shards through the shard cache, with a store holding the
  // job's `access`, whole or streamed (see DatasetSpec.streaming).
  // `access` is kept only by a streamed job's store.
  absl::StatusOr<JobDataset> Make(JobConfig* config, const FetchAccess& access,
                                  const ScanLimits& limits,
                                  absl::Duration fetch_timeout);
  // The indexes in memory.
  DatasetCache::Usage usage() const { return cache_.usage(); }

 private:
  // Whether the job over remote `names` streams: as it asked, else when
  // they are more than kMaxRemoteShards or larger (by their probes, kept
  // in probed->probed for the fetch) than the cache may give one user.
  absl::StatusOr<bool> Streams(const JobConfig& config,
                               const std::vector<std::string>& names,
                               RemoteShardSource* probed);
  // A streamed job's shard table (LoadShardTable) and shards.
  absl::StatusOr<JobDataset> Stream(const JobConfig& config,
                                    const std::vector<std::string>& names,
                                    std::unique_ptr<ObjectStore> store,
                                    RemoteShardSource remote,
                                    absl::Duration fetch_timeout);

  const JobDatasetsOptions options_;
  DatasetCache cache_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_JOB_DATASETS_H_
