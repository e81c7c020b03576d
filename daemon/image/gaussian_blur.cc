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

// torch's exp on float32 (SLEEF's expf_u10 with fused multiply-adds, as
// its AVX2 kernels run it): Cody-Waite reduction by ln 2, a degree-6
// polynomial, scaling by 2^q in two steps.
float TorchExp(float d) {
  const int q = int(std::nearbyint(d * 1.442695040888963407359924681f));
  float s = std::fma(float(q), -0.693145751953125f, d);
  s = std::fma(float(q), -1.428606765330187045e-06f, s);
  float u = 0.000198527617612853646278381f;
  u = std::fma(u, s, 0.00139304355252534151077271f);
  u = std::fma(u, s, 0.00833336077630519866943359f);
  u = std::fma(u, s, 0.0416664853692054748535156f);
  u = std::fma(u, s, 0.166666671633720397949219f);
  u = std::fma(u, s, 0.5f);
  u = 1.0f + std::fma(s * s, u, s);
  auto pow2 = [](int e) { return std::ldexp(1.0f, e); };
  u = u * pow2(q >> 1) * pow2(q - (q >> 1));
  return d < -104.0f ? 0.0f : u;
}

// torch's sum of a contiguous float32 vector: 8-wide lanes in four
// interleaved accumulators (short vectors: four scalar ones), the tail,
// then the lanes, each sum in that order.
float TorchSum(const std::vector<float>& v) {
  const size_t n = v.size();
  if (n < 8) {
    float p[4] = {0, 0, 0, 0};
    const size_t rows = n / 4;
    for (size_t i = 0; i < rows; ++i) {
      for (int k = 0; k < 4; ++k) p[k] += v[i * 4 + k];
    }
    for (size_t i = rows * 4; i < n; ++i) p[0] += v[i];
    return ((p[0] + p[1]) + p[2]) + p[3];
  }
  const size_t vectors = n / 8, rows = vectors / 4;
  float acc[4][8] = {};
  for (size_t i = 0; i < rows; ++i) {
    for (int k = 0; k < 4; ++k) {
      for (int l = 0; l < 8; ++l) acc[k][l] += v[(i * 4 + k) * 8 + l];
    }
  }
  for (size_t i = rows * 4; i < vectors; ++i) {
    for (int l = 0; l < 8; ++l) acc[0][l] += v[i * 8 + l];
  }
  for (int k = 1; k < 4; ++k) {
    for (int l = 0; l < 8; ++l) acc[0][l] += acc[k][l];
  }
  float sum = 0;
  for (size_t i = vectors * 8; i < n; ++i) sum += v[i];
  for (int l = 0; l < 8; ++l) sum += acc[0][l];
  return sum;
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
  for (int i = 0; i < size; ++i) {
    const float t = float(i - half) / sigma;
    pdf[i] = TorchExp(-0.5f * (t * t));
  }
  const float sum = TorchSum(pdf);
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
