// ColorJitter(brightness, contrast, saturation) on the three uint8 planes of
// an output image, with the arithmetic Pillow's ImageEnhance uses, which is
// what torchvision applies to PIL images: each adjustment blends the image
// with a "degenerate" one (black, its mean grey, its own greyscale) as
// Image.blend does: in float, clipped to [0, 255], truncated.
#ifndef STOKER_DAEMON_IMAGE_COLOR_JITTER_H_
#define STOKER_DAEMON_IMAGE_COLOR_JITTER_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace stoker {

// The factors and order drawn for one sample (1 = unchanged).
struct JitterParams {
  float brightness = 1.0f;
  float contrast = 1.0f;
  float saturation = 1.0f;
  // The adjustments in the order they apply: 0 brightness, 1 contrast,
  // 2 saturation.
  std::array<int, 3> order = {0, 1, 2};
};

// `planes`: R, G, B planes of `n` pixels each, changed in place.
void AdjustBrightness(uint8_t* planes, size_t n, float factor);
void AdjustContrast(uint8_t* planes, size_t n, float factor);
void AdjustSaturation(uint8_t* planes, size_t n, float factor);
void ApplyJitter(uint8_t* planes, size_t n, const JitterParams& params);

// Pillow's RGB -> L: (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
inline uint8_t Luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >>
                              16);
}

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_COLOR_JITTER_H_
