// The common case of a training sample written straight from the exact
// resample's packed RGB: where the horizontal flip is the only image op a
// pipeline has (RandomResizedCrop + RandomHorizontalFlip, a plain
// Resize + CenterCrop), the output needs no planes. The flip, mirrored
// while writing, and the dtype's table give the same values the planes'
// path gives, without splitting into planes, mirroring each and merging
// them back.
#ifndef STOKER_DAEMON_IMAGE_PACKED_OUTPUT_H_
#define STOKER_DAEMON_IMAGE_PACKED_OUTPUT_H_

#include <cstdint>
#include <vector>

#include "daemon/image/pipeline.h"

namespace stoker {

// float32 and float16 values of each channel's 256 levels (ToTensor,
// ToDtype and Normalize folded into one lookup).
struct ValueTable {
  float f32[3][256];
  uint16_t f16[3][256];
};

// Whether the horizontal flip is the pipeline's only image op (none is
// too): no vertical flip, warp, jitter, grayscale, blur, solarize,
// automatic augmentation or RandomChoice. RandomErasing, on the output,
// does not count.
bool FlipIsTheOnlyImageOp(const Pipeline& pipeline);

// Writes `packed` (pipeline.output's RGB, 3 bytes a pixel, rows packed),
// mirrored left to right if `flip`, to `out` in the pipeline's dtype and
// layout; `values` serves the float dtypes, `scratch` a flipped uint8 NCHW.
void WritePackedOutput(const uint8_t* packed, bool flip,
                       const Pipeline& pipeline, const ValueTable& values,
                       uint8_t* out, std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PACKED_OUTPUT_H_
