// JobDatasets (job_datasets.h): a new job's index, or a streamed job's
// shard table and store.
#include "daemon/jobs/job_datasets.h"

#include <algorithm>

#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/datasets/shard_counts.h"
#include "daemon/datasets/shard_index.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/os/byte_size.h"
#include "daemon/os/file_identity.h"
#include "daemon/remote/remote_url.h"
#include "daemon/spec/job_spec.h"

namespace stoker {
namespace {

uint64_t WindowOf(const JobConfig& config) {
  return config.shuffle_window == 0 ? kDefaultShuffleWindow
                                    : config.shuffle_window;
}

}  // namespace

// A streamed job holds its window of shards and fetches the next.
uint64_t StreamRoom(const JobConfig& config, const ShardTable& table) {
  uint64_t largest = 0;
  for (size_t s = 0; s < table.shards(); ++s) {
    largest = std::max(largest, table.size(s));
  }
  return 2 * WindowOf(config) * largest;
}

namespace {

// Two windows must fit the user's share of the cache.
absl::Status CheckWindow(const JobConfig& config, const ShardTable& table,
                         uint64_t room) {
  const uint64_t needs = StreamRoom(config, table);
  if (needs <= room) return absl::OkStatus();
  const uint64_t largest = needs / (2 * WindowOf(config));
  const uint64_t fits = room / (2 * largest);
  return absl::ResourceExhaustedError(absl::StrCat(
      "a streamed job holds two windows of shuffle_window=", WindowOf(config),
      " shards of up to ", FormatByteSize(largest), " in the shard cache, ",
      "which gives one user ", FormatByteSize(room),
      fits == 0 ? ": it cannot hold two of these shards (--cache_size)"
                : absl::StrCat("; use shuffle_window=", fits,
                               " or less (or a larger --cache_size)")));
}

absl::Status CheckStreamable(const JobConfig& config) {
  if (config.sharding.repetitions > 1) {
    return absl::InvalidArgumentError(
        "repeated_augmentations is not available for a streamed dataset");
  }
  if (config.missing == MissingField::kSkip) {
    return absl::InvalidArgumentError(
        "missing='skip' is not available for a streamed dataset (its "
        "length is counted before its shards are read): use "
        "missing='error', or on_error to replace such samples");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobDataset> JobDatasets::Stream(
    const JobConfig& config, const std::vector<std::string>& names,
    std::unique_ptr<ObjectStore> store, RemoteShardSource remote,
    absl::Duration fetch_timeout) {
  STOKER_RETURN_IF_ERROR(CheckStreamable(config));
  ShardCountsSource counts{.store = store.get(),
                           .counts_dir = remote.cache->dir() + "/counts",
                           .user = config.owner_uid,
                           .fetch = remote.fetch,
                           .scratch_dir = remote.cache->dir()};
  CountsTally tally;
  const absl::Time start = absl::Now();
  STOKER_ASSIGN_OR_RETURN(auto table, LoadShardTable(names, counts, &tally));
  STOKER_RETURN_IF_ERROR(
      CheckWindow(config, *table, remote.cache->max_bytes_for_user()));
  spdlog::info(
      "streamed shards for uid {} on {}: {} shards, {} samples; counts from "
      "{} index-file lines, {} sizes.json entries, {} kept, {} scanned in {}",
      config.owner_uid, DatasetName(config), table->shards(), table->samples(),
      tally.index_file, tally.sizes_json, tally.kept, tally.scanned,
      absl::FormatDuration(
          absl::Trunc(absl::Now() - start, absl::Milliseconds(1))));
  remote.probed = {};  // a window's fetch probes its own shards
  return JobDataset{.streamed = std::make_shared<const StreamedShards>(
                        std::move(table), SchemaOf(config), std::move(store),
                        std::move(remote), fetch_timeout)};
}

absl::StatusOr<bool> JobDatasets::Streams(const JobConfig& config,
                                          const std::vector<std::string>& names,
                                          RemoteShardSource* probed) {
  const RemoteShardSource& remote = *probed;
  if (config.streaming.has_value()) return *config.streaming;
  if (names.size() > kMaxRemoteShards) return true;
  // By the dataset's size against what the cache may give one user, not
  // against what it holds now: the same answer on every node configured
  // alike and at every resume, so that the order stays the same.
  STOKER_ASSIGN_OR_RETURN(const uint64_t total, ProbeTotalSize(names, probed));
  const bool stream = total > remote.cache->max_bytes_for_user();
  if (stream) {
    spdlog::info(
        "{}: {} of shards, more than the {} one user may hold in the "
        "shard cache: streamed",
        DatasetName(config), FormatByteSize(total),
        FormatByteSize(remote.cache->max_bytes_for_user()));
  }
  return stream;
}

absl::StatusOr<JobDataset> JobDatasets::Make(JobConfig* config,
                                             const FetchAccess& access,
                                             const ScanLimits& limits,
                                             absl::Duration fetch_timeout) {
  DatasetRef ref = DatasetRefOf(*config);
  // Remote shards: the cache's files are stokerd's own, fetched and opened
  // with its identity, each only after a probe with the job's access, which
  // only the job's store holds.
  std::unique_ptr<ObjectStore> store;
  RemoteShardSource remote{.cache = options_.shard_cache,
                           .user = config->owner_uid};
  std::vector<std::string> names;
  if (NamesRemoteShards(ref)) {
    STOKER_RETURN_IF_ERROR(CheckFetchAccess(access));
    STOKER_ASSIGN_OR_RETURN(names, RemoteShardNames(ref.shards, kMaxShards));
    store = options_.object_store ? options_.object_store(access)
                                  : std::make_unique<HttpStore>(access);
    remote.store = store.get();
    remote.fetch.deadline = absl::Now() + fetch_timeout;
    remote.fetch.ca_file = options_.remote_ca_file;
    remote.fetch.cancelled = limits.cancelled;
    if (remote.cache != nullptr) {
      STOKER_ASSIGN_OR_RETURN(const bool stream,
                              Streams(*config, names, &remote));
      config->streaming = stream;  // the effective spec says which
      if (stream) {
        return Stream(*config, names, std::move(store), std::move(remote),
                      fetch_timeout);
      }
    }
  }
  const std::unique_ptr<DatasetSource> source =
      MakeDatasetSource(std::move(ref), &remote);
  // What a local scan opens, it opens with the owner's permissions (the
  // ring Create makes afterwards is the daemon's own).
  const ActAs as_owner(source->ReadsAsOwner() ? &config->owner_files : nullptr);
  STOKER_RETURN_IF_ERROR(as_owner.status());
  auto index = source->Index(limits, &cache_);
  config->dataset_path = source->ref().path;  // an ImageFolder's resolved
  if (!index.ok()) return index.status();
  return JobDataset{.index = *std::move(index)};
}

const void* JobDataset::key() const {
  if (index != nullptr) return index.get();
  return streamed.get();
}

uint64_t JobDataset::memory_bytes() const {
  if (index != nullptr) return index->MemoryBytes();
  return streamed != nullptr ? streamed->table().MemoryBytes() : 0;
}

}  // namespace stoker
