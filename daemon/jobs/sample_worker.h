// SampleWorker: one worker thread's way from a sample to its ring row: each
// field's bytes from daemon/datasets/ (SampleReader); an image field decoded
// and augmented by daemon/image/ (SampleDecoder), a bytes field copied as
// it is, a classic label from the index; their buffers bounded together by
// DecodeLimits::max_scratch_bytes. Not thread-safe: one per worker thread.
#ifndef STOKER_DAEMON_JOBS_SAMPLE_WORKER_H_
#define STOKER_DAEMON_JOBS_SAMPLE_WORKER_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "common/ring_layout.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/sample_reader.h"
#include "daemon/image/sample_decoder.h"
#include "daemon/os/path_policy.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// Where one sample's values go: row `row` of a slot whose data starts at
// `slot`, laid out as `layout` says (one tensor per field, one per view of
// the image field with views, then indices).
struct SlotRow {
  uint8_t* slot = nullptr;
  const SlotLayout* layout = nullptr;
  uint32_t row = 0;

  uint8_t* Tensor(size_t t) const {
    const SlotTensor& tensor = layout->tensors[t];
    return slot + tensor.offset + uint64_t{row} * tensor.row_bytes;
  }
  int64_t* Length(size_t t) const {
    return reinterpret_cast<int64_t*>(slot +
                                      layout->tensors[t].lengths_offset) +
           row;
  }
  int64_t* Index() const {
    return reinterpret_cast<int64_t*>(slot + layout->indices_offset) + row;
  }
};

class SampleWorker {
 public:
  SampleWorker(DecodeLimits limits, const PathPolicy* policy)
      : reader_(policy), decoder_(limits) {}

  // Fills `out` with sample `sample` of `index` (the dataset of the job
  // numbered `job_serial`, whose config is `config`): each field in turn,
  // an image through config.pipeline (or each of config.views) with the
  // random parameters of `key`.
  // A mask field is filled after the image, with its draws.
  // A field the sample lacks, or a bytes value past max_field_bytes, fails
  // naming the field (INVALID_ARGUMENT), as any unreadable sample does.
  absl::Status Fill(const JobConfig& config, uint64_t job_serial,
                    const DatasetIndex& index, uint32_t sample, uint64_t key,
                    const SlotRow& out);

  // Closes the shards kept open (a worker with nothing to do).
  void CloseShards() { reader_.CloseShards(); }

 private:
  absl::Status FillField(const JobConfig& config, size_t f, uint64_t job_serial,
                         const DatasetIndex& index, uint32_t sample,
                         uint64_t key, const SlotRow& out);

  // The image of a sample into slot tensor t (and, with views, the ones
  // after it).
  absl::Status DecodeImage(const JobConfig& config,
                           std::span<const uint8_t> bytes, uint64_t key,
                           const SlotRow& out, size_t t);

  SampleReader reader_;
  SampleDecoder decoder_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_SAMPLE_WORKER_H_
