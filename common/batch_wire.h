// What stokerd and the SDK must agree on about a batch handle: the names of
// its tensors, the width of each wire dtype, and how (epoch, batch) numbers
// a job's one sequence of batches. Header-only; its users link stoker::proto.
#ifndef STOKER_COMMON_BATCH_WIRE_H_
#define STOKER_COMMON_BATCH_WIRE_H_

#include <cstdint>

#include "stoker/v1/loader.pb.h"

namespace stoker {

inline constexpr char kImagesTensor[] = "images";
inline constexpr char kLabelsTensor[] = "labels";    // int64 [n]
inline constexpr char kIndicesTensor[] = "indices";  // int64 [n]

// Bytes per value of a tensor of `dtype`; 0 for a dtype this build does not
// know.
constexpr uint32_t DTypeBytes(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_UINT8:
      return 1;
    case v1::DTYPE_FLOAT16:
      return 2;
    case v1::DTYPE_FLOAT32:
      return 4;
    case v1::DTYPE_INT64:
      return 8;
    default:
      return 0;
  }
}

// Batch `batch` of epoch `epoch` as a number in the job's sequence of
// batches (epochs follow each other), and back.
constexpr uint64_t BatchSequence(uint64_t epoch, uint64_t batch,
                                 uint64_t batches_per_epoch) {
  return epoch * batches_per_epoch + batch;
}
struct BatchPlace {
  uint64_t epoch;
  uint64_t batch;
};
constexpr BatchPlace PlaceOf(uint64_t sequence, uint64_t batches_per_epoch) {
  return {sequence / batches_per_epoch, sequence % batches_per_epoch};
}

}  // namespace stoker

#endif  // STOKER_COMMON_BATCH_WIRE_H_
