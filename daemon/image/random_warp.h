// torchvision's RandomRotation and RandomAffine on a PIL image: an angle
// (and for RandomAffine a translation, scale and shear) drawn as their
// get_params draw them, then F.rotate (Pillow's Image.rotate) or F.affine
// (torchvision's inverse matrix through Pillow's affine transform), same
// size, about the image's centre.
#ifndef STOKER_DAEMON_IMAGE_RANDOM_WARP_H_
#define STOKER_DAEMON_IMAGE_RANDOM_WARP_H_

#include <cstdint>
#include <vector>

#include "daemon/image/augment_ops.h"  // AugmentStyle

namespace stoker {

struct WarpSpec {
  enum class Kind { kNone, kRotation, kAffine };
  Kind kind = Kind::kNone;
  double degrees_min = 0, degrees_max = 0;
  bool translate = false;
  double translate_x = 0, translate_y = 0;  // fractions of width, height
  bool scale = false;
  double scale_min = 1, scale_max = 1;
  bool shear_x = false, shear_y = false;
  double shear_x_min = 0, shear_x_max = 0;
  double shear_y_min = 0, shear_y_max = 0;
  AugmentStyle style;
  double p = 1.0;  // RandomApply([RandomRotation(...)], p)
  bool enabled() const { return kind != Kind::kNone; }
};

// What one sample draws (float32 values, as torch's uniform_ gives them).
struct WarpParams {
  bool apply = false;
  double angle = 0;
  int tx = 0, ty = 0;
  double scale = 1;
  double shear_x = 0, shear_y = 0;
};

WarpParams DrawWarp(const WarpSpec& spec, ImageSize size, uint64_t key);

// Applies the warp to three planes of `size`, in place.
void ApplyWarp(const WarpSpec& spec, const WarpParams& params, ImageSize size,
               uint8_t* planes, std::vector<uint8_t>* scratch);

// The same warp on a mask (one plane of `size`), in place: nearest, as
// torchvision's F.rotate / F.affine on a PIL mask with fill=`fill`.
void ApplyMaskWarp(const WarpSpec& spec, const WarpParams& params,
                   ImageSize size, uint8_t fill, uint8_t* plane,
                   std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_RANDOM_WARP_H_
