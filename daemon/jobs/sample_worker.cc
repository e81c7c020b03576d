#include "daemon/jobs/sample_worker.h"

namespace stoker {

absl::Status SampleWorker::Decode(uint64_t job_serial,
                                  const DatasetIndex& index, uint32_t sample,
                                  const Pipeline& pipeline, uint64_t key,
                                  uint8_t* out) {
  absl::StatusOr<std::span<const uint8_t>> bytes =
      reader_.Read(job_serial, index, sample);
  const absl::Status status =
      bytes.ok() ? decoder_.ProcessBytes(*bytes, pipeline, key, out)
                 : bytes.status();
  if (decoder_.TrimScratch(reader_.buffer_bytes())) reader_.FreeBuffer();
  return status;
}

}  // namespace stoker
