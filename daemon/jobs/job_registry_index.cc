// JobRegistry::Index: a new job's dataset index, through the dataset's
// source (daemon/datasets/dataset_source.h).
#include "common/status_macros.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/jobs/job_registry.h"
#include "daemon/os/file_identity.h"
#include "daemon/remote/remote_url.h"

namespace stoker {

absl::StatusOr<std::shared_ptr<const DatasetIndex>> JobRegistry::Index(
    JobConfig* config, const FetchAccess& access, const ScanLimits& limits,
    absl::Duration fetch_timeout) {
  DatasetRef ref = DatasetRefOf(*config);
  // Remote shards: the cache's files are stokerd's own, fetched and opened
  // with its identity, each only after a probe with the job's access, which
  // only the job's store holds.
  std::unique_ptr<ObjectStore> store;
  RemoteShardSource remote{.cache = options_.shard_cache,
                           .user = config->owner_uid};
  if (NamesRemoteShards(ref)) {
    STOKER_RETURN_IF_ERROR(CheckFetchAccess(access));
    store = options_.object_store ? options_.object_store(access)
                                  : std::make_unique<HttpStore>(access);
    remote.store = store.get();
    remote.fetch.deadline = absl::Now() + fetch_timeout;
    remote.fetch.ca_file = options_.remote_ca_file;
    remote.fetch.cancelled = limits.cancelled;
  }
  const std::unique_ptr<DatasetSource> source =
      MakeDatasetSource(std::move(ref), &remote);
  // What a local scan opens, it opens with the owner's permissions (the
  // ring Create makes afterwards is the daemon's own).
  const ActAs as_owner(source->ReadsAsOwner() ? &config->owner_files : nullptr);
  STOKER_RETURN_IF_ERROR(as_owner.status());
  auto index = source->Index(limits, &datasets_);
  config->dataset_path = source->ref().path;  // an ImageFolder's resolved
  return index;
}

}  // namespace stoker
