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
               uint8_t* planes, std::vector<double>* scratch) {
  if (!spec.enabled || !params.apply) return;
  const std::vector<float> kx = GaussianKernel(spec.kernel_x, params.sigma);
  const std::vector<float> ky = GaussianKernel(spec.kernel_y, params.sigma);
  const int w = size.width, h = size.height;
  const int hx = spec.kernel_x / 2, hy = spec.kernel_y / 2;
  const size_t n = size.Pixels();
  scratch->resize(n + w + 2 * hx + w);
  double* rows = scratch->data();   // the horizontal pass, one plane
  double* line = rows + n;          // one padded row
  double* sum = line + w + 2 * hx;  // one row of the vertical pass
  for (int c = 0; c < 3; ++c) {
    uint8_t* plane = planes + c * n;
    for (int y = 0; y < h; ++y) {
      const uint8_t* in = plane + size_t(y) * w;
      for (int x = -hx; x < w + hx; ++x) line[x + hx] = in[Reflect(x, w)];
      double* out = rows + size_t(y) * w;
      for (int x = 0; x < w; ++x) {
        double v = 0;
        for (int i = 0; i < spec.kernel_x; ++i) v += kx[i] * line[x + i];
        out[x] = v;
      }
    }
    for (int y = 0; y < h; ++y) {
      std::fill(sum, sum + w, 0.0);
      for (int i = 0; i < spec.kernel_y; ++i) {
        const double* row = rows + size_t(Reflect(y + i - hy, h)) * w;
        const double weight = ky[i];
        for (int x = 0; x < w; ++x) sum[x] += weight * row[x];
      }
      uint8_t* out = plane + size_t(y) * w;
      for (int x = 0; x < w; ++x) {
        out[x] = uint8_t(std::clamp(std::nearbyint(sum[x]), 0.0, 255.0));
      }
    }
  }
}

}  // namespace stoker
