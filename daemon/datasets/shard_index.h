// The index of a WebDataset: local, uncompressed tar shards (brace
// patterns allowed, see brace_expand.h), grouped into samples from their
// headers and label members alone (tar_members.h, webdataset.h), or, for
// named fields, from their headers alone; no image byte is read. Samples are
// numbered shard by shard, in archive order, as webdataset's own pipeline
// yields them with its shard list unshuffled.
#ifndef STOKER_DAEMON_DATASETS_SHARD_INDEX_H_
#define STOKER_DAEMON_DATASETS_SHARD_INDEX_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/datasets/webdataset.h"

namespace stoker {

// The most shards one dataset may name, after brace expansion.
inline constexpr size_t kMaxShards = size_t{1} << 20;

// Adds tar shards to one dataset's index, one at a time, under the scan's
// limits: what IndexTarShards (local shards) and IndexRemoteShards (cached
// copies of remote ones) share.
class ShardIndexer {
 public:
  ShardIndexer(const ScanLimits& limits, const SampleSchema& schema);

  // Reads the headers (and a classic sample's label members) of the shard
  // open at `fd` (`name` in errors) and adds its samples as a shard named
  // `table_name`; returns the shard's number. Errors: the scan's clock,
  // ReadTarMembers', GroupShardSamples' or GroupFieldSamples', and
  // RESOURCE_EXHAUSTED past limits.max_samples.
  absl::StatusOr<uint32_t> Add(int fd, const std::string& name,
                               std::string table_name);
  DatasetIndex::Builder& builder() { return index_; }
  // The index of the `shards` shards added; INVALID_ARGUMENT when none
  // held a sample.
  absl::StatusOr<std::shared_ptr<const DatasetIndex>> Build(size_t shards);

 private:
  absl::Status CheckSamples(uint64_t more) const;

  const ScanLimits& limits_;
  const SampleSchema& schema_;
  const ScanClock clock_;
  uint64_t members_seen_ = 0;  // all shards together stay under max_entries
  std::vector<std::vector<std::string>> field_suffixes_;
  DatasetIndex::Builder index_;
};

// Indexes the shards (each resolved through limits.policy and opened with
// the calling thread's file identity). Errors name the shard, and the
// header offset or sample key at fault: NOT_FOUND for a shard that does
// not exist; PERMISSION_DENIED for one outside the roots or unreadable;
// INVALID_ARGUMENT for anything ReadTarMembers or GroupShardSamples
// refuses, or shards that hold no sample at all; RESOURCE_EXHAUSTED past
// limits.max_samples; DEADLINE_EXCEEDED or CANCELLED as the limits say.
absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexTarShards(
    const std::vector<std::string>& patterns, const SampleSchema& schema,
    const ScanLimits& limits);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SHARD_INDEX_H_
