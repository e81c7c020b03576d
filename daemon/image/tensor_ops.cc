#include "daemon/image/tensor_ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "daemon/image/pillow_affine.h"  // TorchvisionAffineMatrix

namespace stoker {
namespace {

// A float32 value to uint8 as .clamp(0, 255).to(torch.uint8): truncation.
inline uint8_t Truncate(float v) {
  return uint8_t(std::min(std::max(v, 0.0f), 255.0f));
}

// _blend(img1, img2, ratio) for one plane against a plane or a value.
void Blend(uint8_t* plane, size_t n, const uint8_t* other, float value,
           double ratio) {
  const float r = float(ratio);
  const float s = float(1.0 - ratio);
  for (size_t i = 0; i < n; ++i) {
    const float y = other != nullptr ? float(other[i]) : value;
    plane[i] = Truncate(r * float(plane[i]) + s * y);
  }
}

// rgb_to_grayscale: (0.2989 r + 0.587 g + 0.114 b).to(uint8).
void Gray(const uint8_t* planes, size_t n, uint8_t* out) {
  const uint8_t *r = planes, *g = planes + n, *b = planes + 2 * n;
  for (size_t i = 0; i < n; ++i) {
    const float v = 0.2989f * float(r[i]) + 0.587f * float(g[i]);
    out[i] = Truncate(v + 0.114f * float(b[i]));
  }
}

void Contrast(uint8_t* planes, size_t n, double factor,
              std::vector<uint8_t>* scratch) {
  scratch->resize(n);
  Gray(planes, n, scratch->data());
  // torch.mean: a float32 sum (exact: integers below 2^24) over the count.
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += (*scratch)[i];
  const float mean = float(float(sum) / float(n));
  for (int c = 0; c < 3; ++c) Blend(planes + c * n, n, nullptr, mean, factor);
}

// _blurred_degenerate_image: the 3x3 kernel (1 ... 5 ... 1) / 13, rounded,
// inside a border of the original. k / 13 is never within 1/26 of a half,
// so integer arithmetic rounds it as torch's float32 convolution does.
void Sharpness(uint8_t* planes, ImageSize size, double factor,
               std::vector<uint8_t>* scratch) {
  const int w = size.width, h = size.height;
  if (w <= 2 || h <= 2) return;
  const size_t n = size.Pixels();
  scratch->resize(n);
  uint8_t* blurred = scratch->data();
  for (int c = 0; c < 3; ++c) {
    uint8_t* p = planes + c * n;
    std::memcpy(blurred, p, n);
    for (int y = 1; y < h - 1; ++y) {
      for (int x = 1; x < w - 1; ++x) {
        int k = 4 * p[size_t(y) * w + x];
        for (int dy = -1; dy <= 1; ++dy) {
          for (int dx = -1; dx <= 1; ++dx) k += p[size_t(y + dy) * w + x + dx];
        }
        blurred[size_t(y) * w + x] = uint8_t((2 * k + 13) / 26);
      }
    }
    Blend(p, n, blurred, 0, factor);
  }
}

void TensorAutoContrast(uint8_t* planes, size_t n) {
  for (int c = 0; c < 3; ++c) {
    uint8_t* p = planes + c * n;
    const auto [lo, hi] = std::minmax_element(p, p + n);
    float minimum = float(*lo);
    // bound / (max - min) on a tensor is its reciprocal times bound.
    float scale = (1.0f / (float(*hi) - minimum)) * 255.0f;
    if (!std::isfinite(scale)) {
      minimum = 0;
      scale = 1;
    }
    for (size_t i = 0; i < n; ++i)
      p[i] = Truncate((float(p[i]) - minimum) * scale);
  }
}

// _scale_channel: the histogram's cumulative sum over step, step being the
// non-zero bins but the last, over 255.
void TensorEqualize(uint8_t* planes, size_t n) {
  for (int c = 0; c < 3; ++c) {
    uint8_t* p = planes + c * n;
    std::array<int64_t, 256> hist{};
    for (size_t i = 0; i < n; ++i) ++hist[p[i]];
    int64_t total = 0, last = 0;
    for (int64_t count : hist) {
      if (count != 0) {
        total += count;
        last = count;
      }
    }
    const int64_t step = (total - last) / 255;
    if (step == 0) continue;
    std::array<uint8_t, 256> lut;
    int64_t cumulative = 0;
    for (int v = 0; v < 256; ++v) {  // lut shifted right by one
      lut[v] = uint8_t(std::min<int64_t>((cumulative + step / 2) / step, 255));
      cumulative += hist[v];
    }
    for (size_t i = 0; i < n; ++i) p[i] = lut[p[i]];
  }
}

// grid_sample's bilinear taps at (ix, iy) of three planes of w x h: the
// values (zeros outside) and the mask channel's, summed as torch's vector
// kernel sums them (fused multiply-adds, in this order).
void BilinearTaps(const uint8_t* src, size_t n, int w, int h, float ix,
                  float iy, float value[3], float* mask) {
  const float fx = std::floor(ix), fy = std::floor(iy);
  const int x0 = int(fx), y0 = int(fy);
  const float east = ix - fx, west = 1.0f - east;
  const float south = iy - fy, north = 1.0f - south;
  const float weights[4] = {north * west, north * east, south * west,
                            south * east};
  const int xs[4] = {x0, x0 + 1, x0, x0 + 1};
  const int ys[4] = {y0, y0, y0 + 1, y0 + 1};
  for (int k = 0; k < 4; ++k) {
    const bool in = xs[k] >= 0 && xs[k] < w && ys[k] >= 0 && ys[k] < h;
    const size_t s = in ? size_t(ys[k]) * w + xs[k] : 0;
    for (int c = 0; c < 3; ++c) {
      const float v = in ? float(src[c * n + s]) : 0.0f;
      value[c] = k == 0 ? v * weights[k] : std::fma(v, weights[k], value[c]);
    }
    const float one = in ? 1.0f : 0.0f;
    *mask = k == 0 ? one * weights[k] : std::fma(one, weights[k], *mask);
  }
}

// F_t.affine / F_t.rotate: the inverse matrix `m` (torchvision's, about the
// image centre) as a float32 theta, the grid of _gen_affine_grid, and
// grid_sample(align_corners=False) with zeros outside, or the fill through
// a mask channel sampled the same way.
void GridWarp(uint8_t* planes, ImageSize size, const AffineMatrix& m,
              const TensorStyle& style, std::vector<uint8_t>* scratch) {
  const int w = size.width, h = size.height;
  const size_t n = size.Pixels();
  scratch->resize(3 * n);
  uint8_t* src = scratch->data();
  std::memcpy(src, planes, 3 * n);
  const float hw = float(0.5 * w), hh = float(0.5 * h);
  const float r00 = float(m[0]) / hw, r10 = float(m[1]) / hw,
              r20 = float(m[2]) / hw;
  const float r01 = float(m[3]) / hh, r11 = float(m[4]) / hh,
              r21 = float(m[5]) / hh;
  const bool nearest = style.interpolation == Interpolation::kNearest;
  for (int j = 0; j < h; ++j) {
    const float by = float(j) - float(h) * 0.5f + 0.5f;
    for (int i = 0; i < w; ++i) {
      const float bx = float(i) - float(w) * 0.5f + 0.5f;
      const float gx = (bx * r00 + by * r10) + r20;
      const float gy = (bx * r01 + by * r11) + r21;
      // torch's vector kernel, as its build fuses them: (g + 1) * size / 2
      // - 0.5 in one rounding, and the taps summed by fused multiply-adds.
      const float ix = std::fma(gx + 1.0f, float(w) / 2.0f, -0.5f);
      const float iy = std::fma(gy + 1.0f, float(h) / 2.0f, -0.5f);
      const size_t at = size_t(j) * w + i;
      auto inside = [&](int x, int y) {
        return x >= 0 && x < w && y >= 0 && y < h;
      };
      if (nearest) {
        const int x = int(std::nearbyint(ix)), y = int(std::nearbyint(iy));
        const bool in = inside(x, y);
        for (int c = 0; c < 3; ++c) {
          planes[c * n + at] =
              in ? src[c * n + size_t(y) * w + x]
                 : (style.fill ? (*style.fill)[c] : uint8_t(0));
        }
        continue;
      }
      float mask = 0;
      float value[3] = {0, 0, 0};
      BilinearTaps(src, n, w, h, ix, iy, value, &mask);
      for (int c = 0; c < 3; ++c) {
        float v = value[c];
        if (style.fill) v = v * mask + (1.0f - mask) * float((*style.fill)[c]);
        planes[c * n + at] =
            uint8_t(std::clamp(std::nearbyint(v), 0.0f, 255.0f));
      }
    }
  }
}

// The warps of _apply_op; false for other ops.
bool WarpOp(AugmentOp op, double magnitude, const TensorStyle& style,
            ImageSize size, uint8_t* planes, std::vector<uint8_t>* scratch) {
  const double cx = -0.5 * size.width, cy = -0.5 * size.height;  // center=[0,0]
  const double degrees = std::atan(magnitude) * 180.0 / M_PI;
  switch (op) {
    case AugmentOp::kShearX:
      GridWarp(planes, size,
               TorchvisionAffineMatrix(cx, cy, 0, 0, 0, 1, degrees, 0), style,
               scratch);
      break;
    case AugmentOp::kShearY:
      GridWarp(planes, size,
               TorchvisionAffineMatrix(cx, cy, 0, 0, 0, 1, 0, degrees), style,
               scratch);
      break;
    case AugmentOp::kTranslateX:
      GridWarp(planes, size,
               TorchvisionAffineMatrix(0, 0, 0, int(magnitude), 0, 1, 0, 0),
               style, scratch);
      break;
    case AugmentOp::kTranslateY:
      GridWarp(planes, size,
               TorchvisionAffineMatrix(0, 0, 0, 0, int(magnitude), 1, 0, 0),
               style, scratch);
      break;
    case AugmentOp::kRotate:  // F.rotate: the matrix of -angle
      GridWarp(planes, size,
               TorchvisionAffineMatrix(0, 0, -magnitude, 0, 0, 1, 0, 0), style,
               scratch);
      break;
    default:
      return false;
  }
  return true;
}

}  // namespace

void ApplyTensorOp(AugmentOp op, double magnitude, const TensorStyle& style,
                   ImageSize size, uint8_t* planes,
                   std::vector<uint8_t>* scratch) {
  if (WarpOp(op, magnitude, style, size, planes, scratch)) return;
  const size_t n = size.Pixels();
  switch (op) {
    case AugmentOp::kBrightness:
      for (int c = 0; c < 3; ++c)
        Blend(planes + c * n, n, nullptr, 0, 1.0 + magnitude);
      break;
    case AugmentOp::kColor:
      scratch->resize(n);
      Gray(planes, n, scratch->data());
      for (int c = 0; c < 3; ++c) {
        Blend(planes + c * n, n, scratch->data(), 0, 1.0 + magnitude);
      }
      break;
    case AugmentOp::kContrast:
      Contrast(planes, n, 1.0 + magnitude, scratch);
      break;
    case AugmentOp::kSharpness:
      Sharpness(planes, size, 1.0 + magnitude, scratch);
      break;
    case AugmentOp::kPosterize: {
      const uint8_t mask = uint8_t(-(1 << (8 - int(magnitude))) & 0xff);
      for (size_t i = 0; i < 3 * n; ++i) planes[i] &= mask;
      break;
    }
    case AugmentOp::kSolarize:
      for (size_t i = 0; i < 3 * n; ++i) {
        if (double(planes[i]) >= magnitude) planes[i] = 255 - planes[i];
      }
      break;
    case AugmentOp::kAutoContrast:
      TensorAutoContrast(planes, n);
      break;
    case AugmentOp::kEqualize:
      TensorEqualize(planes, n);
      break;
    case AugmentOp::kInvert:
      for (size_t i = 0; i < 3 * n; ++i) planes[i] = 255 - planes[i];
      break;
    default:  // Identity; the warps are done
      break;
  }
}

}  // namespace stoker
