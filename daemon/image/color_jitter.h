// ColorJitter(brightness, contrast, saturation, hue) on the three uint8
// planes of an output image, with the arithmetic torchvision applies to PIL
// images. The first three are Pillow's ImageEnhance: each blends the image
// with a "degenerate" one (black, its mean grey, its own greyscale) as
// Image.blend does: in float, clipped to [0, 255], truncated. Hue is
// torchvision's adjust_hue: Pillow's RGB -> HSV conversion, the H byte
// shifted with uint8 wraparound, and back (the round trip alone changes
// pixels, so a hue jitter applies it even when the shift is 0).
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
  // Hue: whether it applies, and the byte added to Pillow's H channel.
  bool hue = false;
  uint8_t hue_shift = 0;
  // The adjustments in the order they apply: 0 brightness, 1 contrast,
  // 2 saturation, 3 hue.
  std::array<int, 4> order = {0, 1, 2, 3};
};

// torchvision's shift for a hue factor in [-0.5, 0.5]: np.uint8(h * 255),
// which truncates towards zero and wraps (-0.05 -> 244).
uint8_t HueShift(double hue_factor);

// `planes`: R, G, B planes of `n` pixels each, changed in place.
void AdjustBrightness(uint8_t* planes, size_t n, float factor);
void AdjustContrast(uint8_t* planes, size_t n, float factor);
void AdjustSaturation(uint8_t* planes, size_t n, float factor);
void AdjustHue(uint8_t* planes, size_t n, uint8_t shift);
void ApplyJitter(uint8_t* planes, size_t n, const JitterParams& params);

// Image.blend(degenerate, image, factor) for one value, as Pillow computes
// it: float arithmetic, clipped, truncated.
inline uint8_t PillowBlend(int degenerate, int value, float factor) {
  const float v = float(degenerate) + factor * float(value - degenerate);
  if (v <= 0.0f) return 0;
  if (v >= 255.0f) return 255;
  return static_cast<uint8_t>(v);
}

// Pillow's RGB -> L: (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
inline uint8_t Luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >>
                              16);
}

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_COLOR_JITTER_H_
