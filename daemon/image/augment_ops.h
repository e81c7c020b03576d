// The ops of torchvision's automatic augmentations (TrivialAugmentWide,
// RandAugment, AutoAugment), as torchvision's _apply_op runs them on a PIL
// image, byte for byte with torchvision 0.14 + Pillow 9.4: the affine ones
// through Pillow's warps (pillow_affine.h), the colour ones through
// ImageEnhance's blends (color_jitter.h) and the SMOOTH filter, the tonal
// ones through ImageOps' lookup tables. They work in place on the three
// uint8 planes (R, G, B) of an image.
#ifndef STOKER_DAEMON_IMAGE_AUGMENT_OPS_H_
#define STOKER_DAEMON_IMAGE_AUGMENT_OPS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "daemon/image/pillow_affine.h"

namespace stoker {

// In TrivialAugmentWide's order of its augmentation space (then Invert).
enum class AugmentOp : uint8_t {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
  kInvert,
};
inline constexpr int kAugmentOpCount = 15;

// torchvision's name of the op ("ShearX", ...), and back.
std::string_view AugmentOpName(AugmentOp op);
std::optional<AugmentOp> AugmentOpByName(std::string_view name);

// How the affine ops resample (kNearest, kBilinear or kBicubic: Pillow's
// affine filters) and what they fill.
struct AugmentStyle {
  Interpolation interpolation = Interpolation::kNearest;
  FillColor fill = {0, 0, 0};
};

// _apply_op(img, op, magnitude, interpolation, fill) on `planes` (three
// planes of `size`), in place. `scratch` is reused between calls.
void ApplyAugmentOp(AugmentOp op, double magnitude, const AugmentStyle& style,
                    ImageSize size, uint8_t* planes,
                    std::vector<uint8_t>* scratch);

// The single ops, each as torchvision's F.<op> on a PIL image.
void Posterize(uint8_t* planes, size_t n, int bits);
void Solarize(uint8_t* planes, size_t n, double threshold);
void Invert(uint8_t* planes, size_t n);
void AutoContrast(uint8_t* planes, size_t n);
void Equalize(uint8_t* planes, size_t n);
// ImageEnhance.Sharpness: a blend with the image through Pillow's 3x3
// SMOOTH kernel (border pixels kept).
void AdjustSharpness(uint8_t* planes, ImageSize size, float factor,
                     std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_AUGMENT_OPS_H_
