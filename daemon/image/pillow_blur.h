// Pillow's ImageFilter.GaussianBlur(radius) on an RGB image, byte for byte:
// the radius turned into a box radius for three passes (Gwosdek et al.,
// as Pillow's _gaussian_blur_radius computes it in float), then three
// passes of a box blur along the rows and three along the columns, in
// Pillow's 8.24 fixed point, the edges extended by their last pixel.
// DINO's and MoCo v3's own GaussianBlur classes call exactly this (see
// stoker.PILGaussianBlur); torchvision's GaussianBlur is gaussian_blur.h.
#ifndef STOKER_DAEMON_IMAGE_PILLOW_BLUR_H_
#define STOKER_DAEMON_IMAGE_PILLOW_BLUR_H_

#include <cstdint>
#include <vector>

#include "daemon/image/decode_types.h"  // ImageSize

namespace stoker {

// Pillow's passes of a box blur.
inline constexpr int kPillowBlurPasses = 3;

// The (fractional) box radius of `passes` passes that approximates a
// Gaussian of `radius` (Pillow's _gaussian_blur_radius, in float).
float PillowBoxRadius(float radius, int passes);

// Blurs the three planes of `size` in place as
// image.filter(ImageFilter.GaussianBlur(radius)) does; `scratch` is reused.
void ApplyPillowBlur(float radius, ImageSize size, uint8_t* planes,
                     std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PILLOW_BLUR_H_
