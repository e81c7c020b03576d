// DatasetIndex: every sample of a dataset, where its bytes lie and its
// label, in dataset order. Built once when a job is created (ImageFolder
// scan, tar headers, manifest rows) and then immutable, so that jobs over
// the same data share one (DatasetCache).
//
// A sample has one or more fields, each held one way (FieldStore): a file
// (an ImageFolder's image, a manifest's path column), a member of its tar
// shard, or text the index keeps (a manifest's other columns). A classic
// dataset has one field, its image; a job with named fields has one per
// field, in the job's order, and may lack some (FieldValue::present).
//
// Compact, with no string per sample:
//  * files: a table of directories, and per sample its directory's number,
//    the end of its file name in one name arena, and its label: 12 bytes
//    plus the file name;
//  * tar shards: a table of shard paths, and per sample its shard's number
//    and its label, and per field the member's offset and size: 20 bytes
//    for a classic sample, 12 more per further field;
//  * text fields: 12 bytes per value plus its text.
// Labels take 4 bytes when every label fits in 32 bits, else 8.
// The paths a sample is read from are rebuilt when it is read.
//
// Thread-safety: a built index is immutable; Builder is not thread-safe.
#ifndef STOKER_DAEMON_DATASETS_DATASET_INDEX_H_
#define STOKER_DAEMON_DATASETS_DATASET_INDEX_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/unique_fd.h"
#include "daemon/os/path_policy.h"
#include "stoker/vocabulary.h"  // DatasetKind

namespace stoker {

// A file or directory as it was when the index was built: if it still
// opens with the same identity and times, what the index took from it has
// not changed (see DatasetCache).
struct FileStamp {
  std::string path;
  bool directory = false;
  dev_t dev = 0;
  ino_t ino = 0;
  int64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// Takes the stamp of `fd`, open at `path`.
absl::Status StampOf(int fd, const std::string& path, bool directory,
                     FileStamp* out);

// Whether the file `now` describes is still the one `was` stamped, with
// the same contents as far as size and mtime tell (its ctime may differ:
// a chmod does not move its bytes).
bool SameContents(const struct stat& now, const FileStamp& was);

// A shard or manifest given as `path` (named `field` in errors): resolved
// through `policy` into *resolved, looked at before it is opened (see
// OpenSample), opened with the calling thread's identity and stamped.
absl::StatusOr<UniqueFd> OpenDatasetFile(const std::string& path,
                                         const PathPolicy& policy,
                                         absl::string_view field,
                                         std::string* resolved,
                                         FileStamp* stamp, struct stat* st);

// A shard the daemon opened itself and keeps open for the index's life (a
// remote shard in the shard cache, whose file only stokerd may open): its
// descriptor, and what keeps it valid.
struct HeldShard {
  int fd = -1;
  std::shared_ptr<const void> keeper;
};

// A shard member's bytes.
struct MemberRange {
  uint32_t shard = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// How an index holds one field of its samples.
enum class FieldStore {
  kFile,    // the sample's file (Path)
  kMember,  // a member of the sample's shard (FieldValue::range)
  kText,    // text in the index (FieldValue::text)
  kPath,    // another file of the sample (a manifest's mask column): its
            // path, resolved when indexed, as text (FieldValue::text)
};

// One sample's value of one field.
struct FieldValue {
  bool present = true;
  MemberRange range;      // kMember
  std::string_view text;  // kText
};

class DatasetIndex {
 public:
  class Builder;

  DatasetKind kind() const { return kind_; }
  bool in_shards() const { return kind_ == DatasetKind::kTarShards; }
  uint32_t size() const { return size_; }
  int64_t label(uint32_t i) const {
    return labels_.empty() ? int64_t{labels32_[i]} : labels_[i];
  }
  const std::vector<std::string>& class_names() const { return class_names_; }
  // Files: the path of sample i.
  std::string Path(uint32_t i) const;
  // Shards: the shard paths, and the shard sample i lies in.
  const std::vector<std::string>& shards() const { return tables_; }
  uint32_t shard_of(uint32_t i) const { return shard_of_[i]; }
  // The fields of every sample, how each is held, and sample i's value of
  // field f. largest(f): the largest value of a member or text field.
  uint32_t fields() const { return uint32_t(stores_.size()); }
  FieldStore store(uint32_t f) const { return stores_[f]; }
  FieldValue Value(uint32_t i, uint32_t f) const;
  uint64_t largest(uint32_t f) const { return largest_[f]; }
  // Samples left out because they lacked a field (MissingField::kSkip).
  uint64_t skipped() const { return skipped_; }
  // Sample i for humans: its path, or "<shard> member at byte N".
  std::string Describe(uint32_t i) const;

  // What the index was built from (see FileStamp); for shards, stamp i is
  // shard i's. Remote shards have no stamps: they are held instead.
  const std::vector<FileStamp>& stamps() const { return stamps_; }
  // Remote shards: held shard i, read through its descriptor (empty for
  // local data, which is opened by path).
  bool held() const { return !held_.empty(); }
  const HeldShard& held_shard(uint32_t shard) const { return held_[shard]; }
  // Heap bytes held (what bench/ and GetJob report).
  uint64_t MemoryBytes() const;

 private:
  // A member (offset in its shard) or a text (offset in texts_), 12 bytes.
  struct Ref {
    uint32_t offset_low;
    uint32_t offset_high;
    uint32_t size;  // kAbsent: the sample lacks the field
    uint64_t offset() const { return uint64_t{offset_high} << 32 | offset_low; }
  };
  static constexpr uint32_t kAbsent = UINT32_MAX;

  DatasetKind kind_ = DatasetKind::kImageFolder;
  std::vector<std::string> class_names_;
  std::vector<std::string> tables_;  // directories, or shard paths
  uint32_t size_ = 0;
  std::vector<int32_t> labels32_;  // when every label fits
  std::vector<int64_t> labels_;    // otherwise
  // Fields: how each is held, its column in refs_ (kMember, kText), and its
  // largest value.
  std::vector<FieldStore> stores_;
  std::vector<uint32_t> ref_column_;
  std::vector<uint64_t> largest_;
  uint32_t refs_per_sample_ = 0;
  std::vector<Ref> refs_;  // [sample * refs_per_sample_ + column]
  std::string texts_;
  uint64_t skipped_ = 0;
  // Files.
  std::vector<uint32_t> dir_of_;
  std::vector<uint32_t> name_end_;
  std::string names_;
  // Shards.
  std::vector<uint32_t> shard_of_;
  std::vector<FileStamp> stamps_;
  std::vector<HeldShard> held_;
};

// What GetJob reports of a job's dataset (kept after its index is let go).
struct DatasetSummary {
  DatasetKind kind = DatasetKind::kImageFolder;
  uint64_t samples = 0;
  std::vector<std::string> class_names;
  uint64_t shards = 0;
  uint64_t index_bytes = 0;
  uint64_t skipped = 0;
};
DatasetSummary Summarize(const DatasetIndex& index);

class DatasetIndex::Builder {
 public:
  // A classic index: one field, the image (a file, or a shard member).
  explicit Builder(DatasetKind kind);
  // An index of these fields (at most one kFile).
  Builder(DatasetKind kind, std::vector<FieldStore> stores);

  void SetClassNames(std::vector<std::string> names) {
    index_.class_names_ = std::move(names);
  }
  void AddStamp(FileStamp stamp) { index_.stamps_.push_back(std::move(stamp)); }
  // Remote shards: one per shard, in shard order.
  void AddHeld(HeldShard held) { index_.held_.push_back(std::move(held)); }
  // Files: `directory` holds no trailing slash ("" is the file system's
  // root); `texts`, one per kText field in field order (nullopt: absent).
  // RESOURCE_EXHAUSTED when the names pass 4 GiB or a text 4 GiB - 2.
  absl::Status AddFile(
      const std::string& directory, const std::string& name, int64_t label,
      const std::vector<std::optional<std::string>>& texts = {});
  // Shards: returns the number of a new shard.
  uint32_t AddShard(std::string path);
  // A classic shard sample: its image member.
  void AddMember(uint32_t shard, uint64_t offset, uint32_t size, int64_t label);
  // A shard sample of named fields: one member per field (nullopt: absent).
  void AddMembers(uint32_t shard,
                  const std::vector<std::optional<MemberRange>>& members);
  // Samples left out (MissingField::kSkip).
  void Skip(uint64_t samples) { index_.skipped_ += samples; }
  uint64_t samples() const { return index_.labels_.size(); }

  std::shared_ptr<const DatasetIndex> Build();

 private:
  void AddRef(uint32_t field, uint64_t offset, uint64_t size, bool present);

  DatasetIndex index_;
  absl::flat_hash_map<std::string, uint32_t> directories_;
  uint32_t last_dir_ = UINT32_MAX;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_DATASET_INDEX_H_
