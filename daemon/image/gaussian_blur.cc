#include "daemon/image/gaussian_blur.h"

#include <algorithm>
#include <cmath>

#include "daemon/image/counter_random.h"

namespace stoker {
namespace {

// torch's reflect padding (numpy's "reflect"): the edge is not repeated;
// valid for pads shorter than the axis.
inline int Reflect(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

// sum[x] = fma(in[x], k, sum[x]) for x < w.
using RowFma = void (*)(float* sum, const float* in, float k, int w);

__attribute__((target("avx2,fma"))) void RowFmaHardware(float* sum,
                                                        const float* in,
                                                        float k, int w) {
  for (int x = 0; x < w; ++x) sum[x] = __builtin_fmaf(in[x], k, sum[x]);
}

void RowFmaPortable(float* sum, const float* in, float k, int w) {
  for (int x = 0; x < w; ++x) sum[x] = std::fma(in[x], k, sum[x]);
}

RowFma PickRowFma() {
  static const RowFma picked =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
          ? RowFmaHardware
          : RowFmaPortable;
  return picked;
}

}  // namespace

BlurParams DrawBlur(const BlurSpec& spec, uint64_t key) {
  BlurParams b;
  if (!spec.enabled) return b;
  b.apply = spec.p >= 1 || Chance(Mix64(key ^ 0x9a11), spec.p);
  uint64_t k = 0;
  b.sigma = float(Uniform(key, &k, spec.sigma_min, spec.sigma_max));
  return b;
}

std::vector<float> GaussianKernel(int size, float sigma) {
  // linspace(-h, h, size) is exact for odd sizes (integer steps); then
  // pdf = exp(-0.5 * (x / sigma)^2), and pdf / pdf.sum(), all float32.
  std::vector<float> pdf(size);
  const int half = (size - 1) / 2;
  float sum = 0;
  for (int i = 0; i < size; ++i) {
    const float t = float(i - half) / sigma;
    pdf[i] = std::exp(-0.5f * (t * t));
    sum += pdf[i];
  }
  for (float& v : pdf) v /= sum;
  return pdf;
}

void ApplyBlur(const BlurSpec& spec, const BlurParams& params, ImageSize size,
               uint8_t* planes, std::vector<float>* scratch) {
  if (!spec.enabled || !params.apply) return;
  const std::vector<float> kx = GaussianKernel(spec.kernel_x, params.sigma);
  const std::vector<float> ky = GaussianKernel(spec.kernel_y, params.sigma);
  // torch.mm(ky[:, None], kx[None, :]): one float32 product per tap.
  std::vector<float> kernel(ky.size() * kx.size());
  for (size_t i = 0; i < ky.size(); ++i) {
    for (size_t j = 0; j < kx.size(); ++j)
      kernel[i * kx.size() + j] = ky[i] * kx[j];
  }
  const int w = size.width, h = size.height;
  const int hx = spec.kernel_x / 2, hy = spec.kernel_y / 2;
  const int pw = w + 2 * hx, ph = h + 2 * hy;
  const size_t n = size.Pixels();
  scratch->resize(size_t(pw) * ph + w);
  float* padded = scratch->data();
  float* sum = padded + size_t(pw) * ph;
  const RowFma row_fma = PickRowFma();
  for (int c = 0; c < 3; ++c) {
    uint8_t* plane = planes + c * n;
    for (int y = 0; y < ph; ++y) {
      const uint8_t* in = plane + size_t(Reflect(y - hy, h)) * w;
      float* out = padded + size_t(y) * pw;
      for (int x = 0; x < pw; ++x) out[x] = in[Reflect(x - hx, w)];
    }
    for (int y = 0; y < h; ++y) {
      // Each value sums its taps row by row, one fused multiply-add each,
      // from zero: torch's conv2d (oneDNN) to the last bit.
      std::fill(sum, sum + w, 0.0f);
      for (int i = 0; i < spec.kernel_y; ++i) {
        const float* row = padded + size_t(y + i) * pw;
        for (int j = 0; j < spec.kernel_x; ++j) {
          row_fma(sum, row + j, kernel[size_t(i) * spec.kernel_x + j], w);
        }
      }
      uint8_t* out = plane + size_t(y) * w;
      for (int x = 0; x < w; ++x) {
        out[x] = uint8_t(std::clamp(std::nearbyint(sum[x]), 0.0f, 255.0f));
      }
    }
  }
}

}  // namespace stoker
