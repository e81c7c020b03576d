// torchvision's automatic-augmentation ops on a uint8 tensor, the path
// AugMix takes (it converts a PIL image to a tensor first): warps through
// an affine grid and grid_sample (zeros outside, or a fill through a mask
// channel), colour ops through _blend's float32 arithmetic and truncation,
// the tonal ops through their tensor forms. Each is written from
// torchvision's functional_tensor.py, in float32 where it computes in
// float32. grid_sample follows torch's vectorised CPU kernel as its build
// compiles it, with the unnormalisation and the taps' sum as fused
// multiply-adds (what GCC makes of them with FMA): byte-equal to Debian's
// torch 1.13 (tests/python/test_aug_mix.py); a torch built to round those
// otherwise would differ by one in some bilinear values.
#ifndef STOKER_DAEMON_IMAGE_TENSOR_OPS_H_
#define STOKER_DAEMON_IMAGE_TENSOR_OPS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/image/augment_ops.h"  // AugmentOp, FillColor, ImageSize

namespace stoker {

struct TensorStyle {
  Interpolation interpolation = Interpolation::kBilinear;
  std::optional<FillColor> fill;  // none: zeros outside, no mask
};

// _apply_op(img, op, magnitude, interpolation, fill) on a uint8 tensor of
// three planes of `size`, in place.
void ApplyTensorOp(AugmentOp op, double magnitude, const TensorStyle& style,
                   ImageSize size, uint8_t* planes,
                   std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_TENSOR_OPS_H_
