// SampleWorker: one worker thread's way from a sample to its ring row: the
// bytes from daemon/datasets/ (SampleReader), decoded and augmented by
// daemon/image/ (SampleDecoder), with their buffers bounded together by
// DecodeLimits::max_scratch_bytes. Not thread-safe: one per worker thread.
#ifndef STOKER_DAEMON_JOBS_SAMPLE_WORKER_H_
#define STOKER_DAEMON_JOBS_SAMPLE_WORKER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/sample_reader.h"
#include "daemon/image/sample_decoder.h"
#include "daemon/os/path_policy.h"

namespace stoker {

class SampleWorker {
 public:
  SampleWorker(DecodeLimits limits, const PathPolicy* policy)
      : reader_(policy), decoder_(limits) {}

  // Decodes sample `sample` of `index` (the dataset of the job numbered
  // `job_serial`) through `pipeline` with the random parameters of `key`,
  // writing pipeline.BytesPerImage() bytes to `out`.
  absl::Status Decode(uint64_t job_serial, const DatasetIndex& index,
                      uint32_t sample, const Pipeline& pipeline, uint64_t key,
                      uint8_t* out);

  // Closes the shards kept open (a worker with nothing to do).
  void CloseShards() { reader_.CloseShards(); }

 private:
  SampleReader reader_;
  SampleDecoder decoder_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_SAMPLE_WORKER_H_
