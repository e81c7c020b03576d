#include "daemon/image/color_jitter.h"

#include <cmath>

// Pillow's float expressions, evaluated as written: no fused multiply-add.
#pragma STDC FP_CONTRACT OFF

namespace stoker {
namespace {

// A per-value adjustment as a table, applied to every plane.
void ApplyTable(uint8_t* planes, size_t n, const uint8_t (&table)[256]) {
  for (size_t i = 0; i < 3 * n; ++i) planes[i] = table[planes[i]];
}

}  // namespace

void AdjustBrightness(uint8_t* planes, size_t n, float factor) {
  uint8_t table[256];
  for (int v = 0; v < 256; ++v) table[v] = PillowBlend(0, v, factor);
  ApplyTable(planes, n, table);
}

void AdjustContrast(uint8_t* planes, size_t n, float factor) {
  // ImageEnhance.Contrast: the mean of the greyscale image, rounded.
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += Luma(planes[i], planes[n + i], planes[2 * n + i]);
  }
  const int mean = static_cast<int>(double(sum) / double(n) + 0.5);
  uint8_t table[256];
  for (int v = 0; v < 256; ++v) table[v] = PillowBlend(mean, v, factor);
  ApplyTable(planes, n, table);
}

void AdjustSaturation(uint8_t* planes, size_t n, float factor) {
  // ImageEnhance.Color: blend with the image's own greyscale.
  uint8_t* r = planes;
  uint8_t* g = planes + n;
  uint8_t* b = planes + 2 * n;
  for (size_t i = 0; i < n; ++i) {
    const int l = Luma(r[i], g[i], b[i]);
    r[i] = PillowBlend(l, r[i], factor);
    g[i] = PillowBlend(l, g[i], factor);
    b[i] = PillowBlend(l, b[i], factor);
  }
}

void ApplyJitter(uint8_t* planes, size_t n, const JitterParams& params) {
  for (int op : params.order) {
    switch (op) {
      case 0:
        if (params.brightness != 1.0f)
          AdjustBrightness(planes, n, params.brightness);
        break;
      case 1:
        if (params.contrast != 1.0f) AdjustContrast(planes, n, params.contrast);
        break;
      case 2:
        if (params.saturation != 1.0f)
          AdjustSaturation(planes, n, params.saturation);
        break;
      case 3:
        if (params.hue) AdjustHue(planes, n, params.hue_shift);
        break;
    }
  }
}

}  // namespace stoker
