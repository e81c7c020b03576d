// ShardTable: the shard-level index of a streamed dataset (remote shards
// too many for the node's cache): per shard its name, size, version and
// sample count, and no member offsets (those are read from a shard's own
// headers once it is fetched, for the shards a job holds at the time).
//
// 20 bytes per shard plus its name and version: 200k shards of LAION-2B
// (2e9 samples) take about 17 MB, however many samples they hold.
//
// Where the counts come from (see shard_counts.h): an index file written by
// `stokerctl index`, open_clip's sizes.json, or a first scan. The index
// file is text, one line per shard after a header line:
//
//   # stoker shard index 1
//   <name> TAB <samples> TAB <size in bytes> TAB <version, or ->
//
// A name without a scheme or a leading '/' is relative to the file's own
// directory (the file sits beside its shards).
//
// Thread-safety: immutable once built.
#ifndef STOKER_DAEMON_DATASETS_SHARD_TABLE_H_
#define STOKER_DAEMON_DATASETS_SHARD_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace stoker {

// The first line of an index file.
inline constexpr absl::string_view kShardIndexHeader = "# stoker shard index 1";

// One shard as an index file or a scan gives it.
struct ShardInfo {
  uint32_t samples = 0;
  uint64_t size = 0;    // 0: unknown (sizes.json gives counts only)
  std::string version;  // "": unknown
};

class ShardTable {
 public:
  class Builder;

  size_t shards() const { return samples_->size(); }
  uint64_t samples() const { return total_; }
  absl::string_view name(size_t i) const;
  absl::string_view version(size_t i) const;
  uint64_t size(size_t i) const { return sizes_[i]; }
  uint32_t samples(size_t i) const { return (*samples_)[i]; }
  // Every shard's count, in table order (what StreamOrder takes).
  std::shared_ptr<const std::vector<uint32_t>> counts() const {
    return samples_;
  }
  uint64_t MemoryBytes() const;

 private:
  std::string names_;
  std::string versions_;
  std::vector<uint32_t> name_end_;
  std::vector<uint32_t> version_end_;
  std::vector<uint64_t> sizes_;
  std::shared_ptr<std::vector<uint32_t>> samples_ =
      std::make_shared<std::vector<uint32_t>>();
  uint64_t total_ = 0;
};

class ShardTable::Builder {
 public:
  // RESOURCE_EXHAUSTED when the names or versions pass 4 GiB.
  absl::Status Add(absl::string_view name, const ShardInfo& info);
  std::shared_ptr<const ShardTable> Build();

 private:
  std::shared_ptr<ShardTable> table_ = std::make_shared<ShardTable>();
};

// The lines of an index file at `path` (its directory resolves relative
// names), by the shard's full name. INVALID_ARGUMENT naming the path and
// the line for a missing header, a line without four fields, a count or
// size that is not a number (counts must fit 32 bits), or a name given
// twice.
absl::StatusOr<absl::flat_hash_map<std::string, ShardInfo>> ParseShardIndex(
    absl::string_view text, absl::string_view path);

// One line of an index file (no newline).
std::string ShardIndexLine(absl::string_view name, const ShardInfo& info);

// The counts of open_clip's sizes.json at `path` ({"00000.tar": 10000,
// ...}), by the shard's full name. INVALID_ARGUMENT naming the path for
// JSON that is not one object of non-negative integers below 2^32.
absl::StatusOr<absl::flat_hash_map<std::string, ShardInfo>> ParseSizesJson(
    absl::string_view text, absl::string_view path);

// The directory part of a shard name or file path ("s3://b/x/0.tar" ->
// "s3://b/x"), and `name` resolved against `dir` when it is relative.
absl::string_view DirectoryOf(absl::string_view name);
std::string ResolveAgainst(absl::string_view dir, absl::string_view name);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SHARD_TABLE_H_
