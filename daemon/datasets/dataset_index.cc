#include "daemon/datasets/dataset_index.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/datasets/sample_file.h"

namespace stoker {
namespace {

template <typename T>
uint64_t HeapBytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

uint64_t HeapBytes(const std::vector<std::string>& v) {
  uint64_t bytes = v.capacity() * sizeof(std::string);
  for (const std::string& s : v) {
    if (s.capacity() > 15) bytes += s.capacity() + 1;  // beyond the SSO
  }
  return bytes;
}

int64_t Nanos(const timespec& t) {
  return int64_t(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

absl::Status StampOf(int fd, const std::string& path, bool directory,
                     FileStamp* out) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot stat '", path, "': ", std::strerror(errno)));
  }
  *out = {path,
          directory,
          st.st_dev,
          st.st_ino,
          int64_t(st.st_size),
          Nanos(st.st_mtim),
          Nanos(st.st_ctim)};
  return absl::OkStatus();
}

bool SameContents(const struct stat& now, const FileStamp& was) {
  return now.st_dev == was.dev && now.st_ino == was.ino &&
         int64_t(now.st_size) == was.size && Nanos(now.st_mtim) == was.mtime_ns;
}

absl::StatusOr<UniqueFd> OpenDatasetFile(const std::string& path,
                                         const PathPolicy& policy,
                                         absl::string_view field,
                                         std::string* resolved,
                                         FileStamp* stamp, struct stat* st) {
  STOKER_ASSIGN_OR_RETURN(*resolved, policy.Resolve(path, field));
  absl::StatusOr<UniqueFd> fd = OpenSample(*resolved, &policy, st);
  if (!fd.ok()) {
    return absl::Status(
        fd.status().code(),
        absl::StrCat(field, " '", path, "' ", fd.status().message()));
  }
  STOKER_RETURN_IF_ERROR(StampOf(fd->get(), path, false, stamp));
  return fd;
}

std::string DatasetIndex::Path(uint32_t i) const {
  const uint32_t begin = i == 0 ? 0 : name_end_[i - 1];
  return absl::StrCat(
      tables_[dir_of_[i]], "/",
      absl::string_view(names_).substr(begin, name_end_[i] - begin));
}

MemberRange DatasetIndex::Range(uint32_t i) const {
  const Member& m = members_[i];
  return {m.shard, m.offset, m.size};
}

std::string DatasetIndex::Describe(uint32_t i) const {
  if (!in_shards()) return Path(i);
  const Member& m = members_[i];
  return absl::StrCat(tables_[m.shard], " member at byte ", m.offset);
}

uint64_t DatasetIndex::MemoryBytes() const {
  uint64_t bytes =
      HeapBytes(class_names_) + HeapBytes(tables_) + HeapBytes(labels32_) +
      HeapBytes(labels_) + HeapBytes(dir_of_) + HeapBytes(name_end_) +
      HeapBytes(members_) + stamps_.capacity() * sizeof(FileStamp) +
      held_.capacity() * sizeof(HeldShard);
  if (names_.capacity() > 15) bytes += names_.capacity() + 1;
  for (const FileStamp& s : stamps_) {
    if (s.path.capacity() > 15) bytes += s.path.capacity() + 1;
  }
  return bytes;
}

DatasetSummary Summarize(const DatasetIndex& index) {
  return {index.kind(), index.size(), index.class_names(),
          index.in_shards() ? index.shards().size() : 0, index.MemoryBytes()};
}

absl::Status DatasetIndex::Builder::AddFile(const std::string& directory,
                                            const std::string& name,
                                            int64_t label) {
  if (index_.names_.size() + name.size() > UINT32_MAX) {
    return absl::ResourceExhaustedError(
        "the dataset's file names pass 4 GiB, more than one index holds");
  }
  if (last_dir_ == UINT32_MAX || index_.tables_[last_dir_] != directory) {
    auto [it, added] =
        directories_.try_emplace(directory, uint32_t(index_.tables_.size()));
    if (added) index_.tables_.push_back(directory);
    last_dir_ = it->second;
  }
  index_.names_ += name;
  index_.dir_of_.push_back(last_dir_);
  index_.name_end_.push_back(uint32_t(index_.names_.size()));
  index_.labels_.push_back(label);
  return absl::OkStatus();
}

uint32_t DatasetIndex::Builder::AddShard(std::string path) {
  index_.tables_.push_back(std::move(path));
  return uint32_t(index_.tables_.size() - 1);
}

void DatasetIndex::Builder::AddMember(uint32_t shard, uint64_t offset,
                                      uint32_t size, int64_t label) {
  index_.members_.push_back({offset, size, shard});
  index_.labels_.push_back(label);
}

std::shared_ptr<const DatasetIndex> DatasetIndex::Builder::Build() {
  index_.size_ = uint32_t(index_.labels_.size());
  if (std::all_of(index_.labels_.begin(), index_.labels_.end(),
                  [](int64_t label) {
                    return label >= INT32_MIN && label <= INT32_MAX;
                  })) {
    index_.labels32_.assign(index_.labels_.begin(), index_.labels_.end());
    std::vector<int64_t>().swap(index_.labels_);
  }
  index_.labels_.shrink_to_fit();
  index_.dir_of_.shrink_to_fit();
  index_.name_end_.shrink_to_fit();
  index_.names_.shrink_to_fit();
  index_.members_.shrink_to_fit();
  index_.tables_.shrink_to_fit();
  index_.stamps_.shrink_to_fit();
  directories_.clear();
  return std::make_shared<const DatasetIndex>(std::move(index_));
}

}  // namespace stoker
