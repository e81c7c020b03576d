#include "daemon/datasets/sample_reader.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/datasets/sample_file.h"

namespace stoker {

absl::StatusOr<int> SampleReader::Shard(uint64_t job_serial,
                                        const DatasetIndex& index,
                                        uint32_t shard) {
  ++uses_;
  for (OpenShard& open : open_) {
    if (open.job == job_serial && open.shard == shard) {
      open.last_use = uses_;
      return open.fd.get();
    }
  }
  struct stat st;
  absl::StatusOr<UniqueFd> fd = OpenSample(index.shards()[shard], policy_, &st);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat("the shard: ", fd.status().message()));
  }
  if (open_.size() >= kMaxOpenShards) {
    open_.erase(std::min_element(open_.begin(), open_.end(),
                                 [](const OpenShard& a, const OpenShard& b) {
                                   return a.last_use < b.last_use;
                                 }));
  }
  open_.push_back({job_serial, shard, *std::move(fd), uses_});
  return open_.back().fd.get();
}

absl::StatusOr<std::span<const uint8_t>> SampleReader::Read(
    uint64_t job_serial, const DatasetIndex& index, uint32_t sample,
    uint32_t field) {
  if (index.store(field) == FieldStore::kFile) {
    STOKER_RETURN_IF_ERROR(ReadFile(index.Path(sample), &buffer_, policy_));
    return std::span<const uint8_t>(buffer_);
  }
  const FieldValue value = index.Value(sample, field);
  if (!value.present) {
    return absl::InvalidArgumentError("the sample has no such member");
  }
  if (index.store(field) == FieldStore::kPath) {
    STOKER_RETURN_IF_ERROR(
        ReadFile(std::string(value.text), &buffer_, policy_));
    return std::span<const uint8_t>(buffer_);
  }
  if (index.store(field) == FieldStore::kText) {
    return std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(value.text.data()), value.text.size());
  }
  const MemberRange& range = value.range;
  int fd = -1;
  if (index.held()) {
    // A remote shard: the cache's copy, which never changes while held.
    fd = index.held_shard(range.shard).fd;
  } else {
    STOKER_ASSIGN_OR_RETURN(fd, Shard(job_serial, index, range.shard));
    // The offsets hold only for the shard as it was indexed: one rewritten
    // since (in place or replaced) would give other bytes, or another image.
    struct stat now;
    if (::fstat(fd, &now) != 0 ||
        !SameContents(now, index.stamps()[range.shard])) {
      return absl::DataLossError(
          "the shard changed after the job was created (its index no longer "
          "describes it): create the job again");
    }
  }
  if (range.size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("member is ", range.size, " bytes, above the limit of ",
                     kMaxFileBytes));
  }
  buffer_.resize(static_cast<size_t>(range.size));
  STOKER_RETURN_IF_ERROR(ReadBytes(fd, range.offset, &buffer_));
  return std::span<const uint8_t>(buffer_);
}

}  // namespace stoker
