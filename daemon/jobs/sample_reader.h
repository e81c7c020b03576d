// SampleReader: how one worker thread gets a sample's bytes and decodes
// them. A file of an ImageFolder or a manifest is opened by its path; a
// member of a tar shard is read with one pread from the shard, which the
// worker keeps open between samples (so a shard sample costs no open, no
// stat and no close).
//
// Shards are opened with the calling thread's file identity (a worker holds
// its job owner's, see HeldIdentity) and kept per job: a descriptor opened
// for one job is never used for another's samples. Not thread-safe: one per
// worker thread.
#ifndef STOKER_DAEMON_JOBS_SAMPLE_READER_H_
#define STOKER_DAEMON_JOBS_SAMPLE_READER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "daemon/image/sample_decoder.h"
#include "daemon/jobs/dataset_index.h"
#include "daemon/os/path_policy.h"

namespace stoker {

class SampleReader {
 public:
  // Shards a worker keeps open at once (least recently used closed first).
  static constexpr size_t kMaxOpenShards = 8;

  SampleReader(DecodeLimits limits, const PathPolicy* policy)
      : decoder_(limits, policy), policy_(policy) {}

  // Decodes sample `sample` of `index` (the dataset of the job numbered
  // `job_serial`) through `pipeline` with the random parameters of `key`.
  absl::Status Decode(uint64_t job_serial, const DatasetIndex& index,
                      uint32_t sample, const Pipeline& pipeline, uint64_t key,
                      uint8_t* out);

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

  SampleDecoder decoder_;
  const PathPolicy* const policy_;
  std::vector<OpenShard> open_;
  uint64_t uses_ = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_SAMPLE_READER_H_
