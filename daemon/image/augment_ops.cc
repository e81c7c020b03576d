#include "daemon/image/augment_ops.h"

#include <array>
#include <cmath>
#include <cstring>

#include "daemon/image/color_jitter.h"

// Pillow's float expressions, evaluated as written: no fused multiply-add.
#pragma STDC FP_CONTRACT OFF

namespace stoker {
namespace {

constexpr std::array<std::string_view, kAugmentOpCount> kNames = {
    "Identity",  "ShearX",     "ShearY",       "TranslateX", "TranslateY",
    "Rotate",    "Brightness", "Color",        "Contrast",   "Sharpness",
    "Posterize", "Solarize",   "AutoContrast", "Equalize",   "Invert"};

// Image.point(lut) with one table per band, each entry clipped to [0, 255]
// as Pillow stores it.
void ApplyTables(uint8_t* planes, size_t n, const int (&lut)[3][256]) {
  for (int c = 0; c < 3; ++c) {
    uint8_t table[256];
    for (int v = 0; v < 256; ++v) {
      table[v] = uint8_t(lut[c][v] < 0 ? 0 : lut[c][v] > 255 ? 255 : lut[c][v]);
    }
    uint8_t* plane = planes + c * n;
    for (size_t i = 0; i < n; ++i) plane[i] = table[plane[i]];
  }
}

void Histogram(const uint8_t* plane, size_t n, uint64_t (&h)[256]) {
  std::memset(h, 0, sizeof(h));
  for (size_t i = 0; i < n; ++i) ++h[plane[i]];
}

// The same table for all three bands.
void ApplyTable(uint8_t* planes, size_t n, const int (&one)[256]) {
  int lut[3][256];
  for (int c = 0; c < 3; ++c) std::memcpy(lut[c], one, sizeof(one));
  ApplyTables(planes, n, lut);
}

void Affine(const AffineMatrix& m, const AugmentStyle& style, ImageSize size,
            uint8_t* planes, std::vector<uint8_t>* scratch) {
  const size_t bytes = 3 * size.Pixels();
  scratch->resize(bytes);
  PillowAffine(planes, scratch->data(), size, m, style.interpolation,
               style.fill);
  std::memcpy(planes, scratch->data(), bytes);
}

constexpr double kRadiansToDegrees = 180.0 / 3.14159265358979323846;

}  // namespace

std::string_view AugmentOpName(AugmentOp op) {
  return kNames[static_cast<int>(op)];
}

std::optional<AugmentOp> AugmentOpByName(std::string_view name) {
  for (int i = 0; i < kAugmentOpCount; ++i) {
    if (kNames[i] == name) return static_cast<AugmentOp>(i);
  }
  return std::nullopt;
}

void Posterize(uint8_t* planes, size_t n, int bits) {
  // ImageOps.posterize: i & ~(2 ** (8 - bits) - 1).
  const int mask = ~((1 << (8 - bits)) - 1);
  int lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = i & mask;
  ApplyTable(planes, n, lut);
}

void Solarize(uint8_t* planes, size_t n, double threshold) {
  int lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = i < threshold ? i : 255 - i;
  ApplyTable(planes, n, lut);
}

void Invert(uint8_t* planes, size_t n) {
  int lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = 255 - i;
  ApplyTable(planes, n, lut);
}

void AutoContrast(uint8_t* planes, size_t n) {
  // ImageOps.autocontrast(cutoff=0): each band stretched from its lowest
  // to its highest value present.
  int lut[3][256];
  for (int c = 0; c < 3; ++c) {
    uint64_t h[256];
    Histogram(planes + c * n, n, h);
    int lo = 0, hi = 255;
    while (lo < 255 && h[lo] == 0) ++lo;
    while (hi > 0 && h[hi] == 0) --hi;
    if (hi <= lo) {
      for (int i = 0; i < 256; ++i) lut[c][i] = i;
      continue;
    }
    const double scale = 255.0 / (hi - lo);
    const double offset = -lo * scale;
    for (int i = 0; i < 256; ++i) {
      const int v = int(i * scale + offset);
      lut[c][i] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
  }
  ApplyTables(planes, n, lut);
}

void Equalize(uint8_t* planes, size_t n) {
  // ImageOps.equalize: a band's cumulative histogram spread over 256
  // steps of (total - count of its highest value) // 255 pixels.
  int lut[3][256];
  for (int c = 0; c < 3; ++c) {
    uint64_t h[256];
    Histogram(planes + c * n, n, h);
    uint64_t total = 0, last = 0;
    int present = 0;
    for (int i = 0; i < 256; ++i) {
      if (h[i] == 0) continue;
      total += h[i];
      last = h[i];
      ++present;
    }
    const uint64_t step = present <= 1 ? 0 : (total - last) / 255;
    uint64_t acc = step / 2;
    for (int i = 0; i < 256; ++i) {
      if (step == 0) {
        lut[c][i] = i;
        continue;
      }
      const uint64_t v = acc / step;
      lut[c][i] = v > 255 ? 255 : int(v);
      acc += h[i];
    }
  }
  ApplyTables(planes, n, lut);
}

void AdjustSharpness(uint8_t* planes, ImageSize size, float factor,
                     std::vector<uint8_t>* scratch) {
  const int w = size.width, h = size.height;
  const size_t n = size.Pixels();
  if (w < 3 || h < 3) return;  // ImagingFilter copies: the blend is a no-op
  scratch->resize(3 * n);
  uint8_t* smooth = scratch->data();
  std::memcpy(smooth, planes, 3 * n);
  // _imaging.c divides the kernel by its scale in float.
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  for (int c = 0; c < 3; ++c) {
    const uint8_t* in = planes + c * n;
    uint8_t* out = smooth + c * n;
    for (int y = 1; y < h - 1; ++y) {
      const uint8_t* up = in + size_t(y - 1) * w;
      const uint8_t* mid = in + size_t(y) * w;
      const uint8_t* down = in + size_t(y + 1) * w;
      for (int x = 1; x < w - 1; ++x) {
        float ss = 0.5f;
        ss += float(down[x - 1]) * k1 + float(down[x]) * k1 +
              float(down[x + 1]) * k1;
        ss += float(mid[x - 1]) * k1 + float(mid[x]) * k5 +
              float(mid[x + 1]) * k1;
        ss += float(up[x - 1]) * k1 + float(up[x]) * k1 + float(up[x + 1]) * k1;
        out[size_t(y) * w + x] = ss <= 0.0f     ? 0
                                 : ss >= 255.0f ? 255
                                                : uint8_t(ss);
      }
    }
  }
  for (size_t i = 0; i < 3 * n; ++i) {
    planes[i] = PillowBlend(smooth[i], planes[i], factor);
  }
}

void ApplyAugmentOp(AugmentOp op, double magnitude, const AugmentStyle& style,
                    ImageSize size, uint8_t* planes,
                    std::vector<uint8_t>* scratch) {
  const size_t n = size.Pixels();
  const double cx = size.width * 0.5, cy = size.height * 0.5;
  switch (op) {
    case AugmentOp::kIdentity:
      return;
    case AugmentOp::kShearX:  // about the corner, shear in degrees
      return Affine(TorchvisionAffineMatrix(
                        0, 0, 0.0, 0, 0, 1.0,
                        std::atan(magnitude) * kRadiansToDegrees, 0.0),
                    style, size, planes, scratch);
    case AugmentOp::kShearY:
      return Affine(
          TorchvisionAffineMatrix(0, 0, 0.0, 0, 0, 1.0, 0.0,
                                  std::atan(magnitude) * kRadiansToDegrees),
          style, size, planes, scratch);
    case AugmentOp::kTranslateX:  // int(magnitude) pixels
      return Affine(TorchvisionAffineMatrix(cx, cy, 0.0, int(magnitude), 0, 1.0,
                                            0.0, 0.0),
                    style, size, planes, scratch);
    case AugmentOp::kTranslateY:
      return Affine(TorchvisionAffineMatrix(cx, cy, 0.0, 0, int(magnitude), 1.0,
                                            0.0, 0.0),
                    style, size, planes, scratch);
    case AugmentOp::kRotate: {
      scratch->resize(3 * n);
      PillowRotate(planes, scratch->data(), size, magnitude,
                   style.interpolation, style.fill);
      std::memcpy(planes, scratch->data(), 3 * n);
      return;
    }
    case AugmentOp::kBrightness:
      return AdjustBrightness(planes, n, float(1.0 + magnitude));
    case AugmentOp::kColor:
      return AdjustSaturation(planes, n, float(1.0 + magnitude));
    case AugmentOp::kContrast:
      return AdjustContrast(planes, n, float(1.0 + magnitude));
    case AugmentOp::kSharpness:
      return AdjustSharpness(planes, size, float(1.0 + magnitude), scratch);
    case AugmentOp::kPosterize:
      return Posterize(planes, n, int(magnitude));
    case AugmentOp::kSolarize:
      return Solarize(planes, n, magnitude);
    case AugmentOp::kAutoContrast:
      return AutoContrast(planes, n);
    case AugmentOp::kEqualize:
      return Equalize(planes, n);
    case AugmentOp::kInvert:
      return Invert(planes, n);
  }
}

}  // namespace stoker
