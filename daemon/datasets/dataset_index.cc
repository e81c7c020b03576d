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

FieldValue DatasetIndex::Value(uint32_t i, uint32_t f) const {
  FieldValue value;
  if (stores_[f] == FieldStore::kFile) return value;
  const Ref& ref = refs_[uint64_t{i} * refs_per_sample_ + ref_column_[f]];
  if (ref.size == kAbsent) {
    value.present = false;
  } else if (stores_[f] == FieldStore::kMember) {
    value.range = {shard_of_[i], ref.offset(), ref.size};
  } else {
    value.text = std::string_view(texts_).substr(ref.offset(), ref.size);
  }
  return value;
}

std::string DatasetIndex::Describe(uint32_t i) const {
  if (!in_shards()) return Path(i);
  for (uint32_t f = 0; f < fields(); ++f) {
    const FieldValue v = Value(i, f);
    if (v.present) {
      return absl::StrCat(tables_[shard_of_[i]], " member at byte ",
                          v.range.offset);
    }
  }
  return absl::StrCat(tables_[shard_of_[i]], " sample ", i);
}

uint64_t DatasetIndex::MemoryBytes() const {
  uint64_t bytes = HeapBytes(class_names_) + HeapBytes(tables_) +
                   HeapBytes(labels32_) + HeapBytes(labels_) +
                   HeapBytes(dir_of_) + HeapBytes(name_end_) +
                   HeapBytes(shard_of_) + HeapBytes(refs_) +
                   stamps_.capacity() * sizeof(FileStamp) +
                   held_.capacity() * sizeof(HeldShard);
  for (const std::string* arena : {&names_, &texts_}) {
    if (arena->capacity() > 15) bytes += arena->capacity() + 1;
  }
  for (const FileStamp& s : stamps_) {
    if (s.path.capacity() > 15) bytes += s.path.capacity() + 1;
  }
  return bytes;
}

DatasetSummary Summarize(const DatasetIndex& index) {
  return {index.kind(),        index.size(),
          index.class_names(), index.in_shards() ? index.shards().size() : 0,
          index.MemoryBytes(), index.skipped()};
}

DatasetIndex::Builder::Builder(DatasetKind kind)
    : Builder(kind, {kind == DatasetKind::kTarShards ? FieldStore::kMember
                                                     : FieldStore::kFile}) {}

DatasetIndex::Builder::Builder(DatasetKind kind,
                               std::vector<FieldStore> stores) {
  index_.kind_ = kind;
  for (FieldStore store : stores) {
    index_.ref_column_.push_back(
        store == FieldStore::kFile ? 0 : index_.refs_per_sample_++);
  }
  index_.largest_.assign(stores.size(), 0);
  index_.stores_ = std::move(stores);
}

void DatasetIndex::Builder::AddRef(uint32_t field, uint64_t offset,
                                   uint64_t size, bool present) {
  const uint32_t stored = present ? uint32_t(size) : kAbsent;
  index_.refs_.push_back({uint32_t(offset), uint32_t(offset >> 32), stored});
  if (present) {
    index_.largest_[field] = std::max(index_.largest_[field], size);
  }
}

absl::Status DatasetIndex::Builder::AddFile(
    const std::string& directory, const std::string& name, int64_t label,
    const std::vector<std::optional<std::string>>& texts) {
  if (index_.names_.size() + name.size() > UINT32_MAX) {
    return absl::ResourceExhaustedError(
        "the dataset's file names pass 4 GiB, more than one index holds");
  }
  for (const std::optional<std::string>& text : texts) {
    if (text && text->size() >= kAbsent) {
      return absl::ResourceExhaustedError(
          "a manifest value passes 4 GiB, more than one index holds");
    }
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
  size_t next = 0;
  for (uint32_t f = 0; f < index_.stores_.size(); ++f) {
    if (index_.stores_[f] != FieldStore::kText &&
        index_.stores_[f] != FieldStore::kPath) {
      continue;
    }
    const std::optional<std::string>* text =
        next < texts.size() ? &texts[next] : nullptr;
    ++next;
    const bool present = text != nullptr && text->has_value();
    AddRef(f, index_.texts_.size(), present ? (*text)->size() : 0, present);
    if (present) index_.texts_ += **text;
  }
  return absl::OkStatus();
}

uint32_t DatasetIndex::Builder::AddShard(std::string path) {
  index_.tables_.push_back(std::move(path));
  return uint32_t(index_.tables_.size() - 1);
}

void DatasetIndex::Builder::AddMember(uint32_t shard, uint64_t offset,
                                      uint32_t size, int64_t label) {
  index_.shard_of_.push_back(shard);
  AddRef(0, offset, size, true);
  index_.labels_.push_back(label);
}

void DatasetIndex::Builder::AddMembers(
    uint32_t shard, const std::vector<std::optional<MemberRange>>& members) {
  index_.shard_of_.push_back(shard);
  for (uint32_t f = 0; f < index_.stores_.size(); ++f) {
    const std::optional<MemberRange>& m = members[f];
    AddRef(f, m ? m->offset : 0, m ? m->size : 0, m.has_value());
  }
  index_.labels_.push_back(0);
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
  index_.shard_of_.shrink_to_fit();
  index_.refs_.shrink_to_fit();
  index_.texts_.shrink_to_fit();
  index_.tables_.shrink_to_fit();
  index_.stamps_.shrink_to_fit();
  directories_.clear();
  return std::make_shared<const DatasetIndex>(std::move(index_));
}

}  // namespace stoker
