// torchvision's GaussianBlur(kernel_size, sigma) on a PIL image: sigma
// drawn uniformly (float32) from [sigma_min, sigma_max], the image turned
// into a float tensor, reflect-padded by half the kernel, convolved with
// the outer product of two float32 Gaussian kernels and rounded half to
// even. Byte-equal to torchvision (tests/python/test_gaussian_blur.py): the
// kernel takes torch's own exp (SLEEF's, with fused multiply-adds) and sum
// order, and each value sums its taps row by row with one fused
// multiply-add each, as torch's conv2d (oneDNN) does; k x k taps a value,
// 8 values at a time where the CPU has AVX2 and FMA.
#ifndef STOKER_DAEMON_IMAGE_GAUSSIAN_BLUR_H_
#define STOKER_DAEMON_IMAGE_GAUSSIAN_BLUR_H_

#include <cstdint>
#include <vector>

#include "daemon/image/decode_types.h"  // ImageSize

namespace stoker {

// Most taps a blur may take per channel of an image (about 0.3 s a sample
// with AVX2): kernel_x * kernel_y * pixels.
inline constexpr double kMaxBlurTaps = 2147483648.0;

struct BlurSpec {
  bool enabled = false;
  // Pillow's GaussianBlur(radius) (pillow_blur.h), the radius drawn from
  // [sigma_min, sigma_max]; no kernel.
  bool pillow = false;
  int kernel_x = 0, kernel_y = 0;  // odd
  double sigma_min = 0.1, sigma_max = 2.0;
  double p = 1.0;  // RandomApply([GaussianBlur(...)], p)
};

struct BlurParams {
  bool apply = false;
  float sigma = 0;  // Pillow's: the radius
};

BlurParams DrawBlur(const BlurSpec& spec, uint64_t key);

// torchvision's _get_gaussian_kernel1d in float32.
std::vector<float> GaussianKernel(int size, float sigma);

// Blurs three planes of `size` in place (each side must exceed half its
// kernel, as torch's reflect padding requires).
void ApplyBlur(const BlurSpec& spec, const BlurParams& params, ImageSize size,
               uint8_t* planes, std::vector<float>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_GAUSSIAN_BLUR_H_
