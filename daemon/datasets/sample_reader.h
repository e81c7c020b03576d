// SampleReader: how one worker thread gets a sample's bytes (what it
// decodes them with is daemon/image/'s SampleDecoder). A file of an ImageFolder
// or a manifest is opened by its path; a member of a tar shard is read with one
// pread from the shard, which the worker keeps open between samples (so a shard
// sample costs no open, no stat and no close).
//
// Shards are opened with the calling thread's file identity (a worker holds
// its job owner's, see HeldIdentity) and kept per job: a descriptor opened
// for one job is never used for another's samples. Not thread-safe: one per
// worker thread.
#ifndef STOKER_DAEMON_DATASETS_SAMPLE_READER_H_
#define STOKER_DAEMON_DATASETS_SAMPLE_READER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/os/path_policy.h"

namespace stoker {

class SampleReader {
 public:
  // Shards a worker keeps open at once (least recently used closed first).
  static constexpr size_t kMaxOpenShards = 8;

  explicit SampleReader(const PathPolicy* policy) : policy_(policy) {}

  // The bytes of field `field` of sample `sample` of `index` (the dataset
  // of the job numbered `job_serial`): its file, its shard member or its
  // text; valid until the next call. A file or member over kMaxFileBytes
  // is INVALID_ARGUMENT, and so is a field the sample lacks; a shard
  // rewritten since it was indexed is DATA_LOSS.
  absl::StatusOr<std::span<const uint8_t>> Read(uint64_t job_serial,
                                                const DatasetIndex& index,
                                                uint32_t sample,
                                                uint32_t field = 0);

  // The file buffer kept between samples, and freeing it.
  size_t buffer_bytes() const { return buffer_.capacity(); }
  void FreeBuffer() { std::vector<uint8_t>().swap(buffer_); }

  // Closes the shards kept open (a worker with nothing to do).
  void CloseShards() { open_.clear(); }
  size_t open_shards() const { return open_.size(); }

 private:
  struct OpenShard {
    uint64_t job;
    uint32_t shard;
    UniqueFd fd;
    uint64_t last_use;
  };
  absl::StatusOr<int> Shard(uint64_t job_serial, const DatasetIndex& index,
                            uint32_t shard);

  const PathPolicy* const policy_;
  std::vector<uint8_t> buffer_;
  std::vector<OpenShard> open_;
  uint64_t uses_ = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SAMPLE_READER_H_
