// torchvision's adjust_hue for PIL images: Image.convert("HSV"), the H
// byte shifted, and back, with Pillow 9's arithmetic (rgb2hsv_row and
// hsv2rgb in libImaging/Convert.c), which mixes float and double; every
// expression below keeps Pillow's types and order, so that results are
// the same bits. What depends on one or two bytes only is a table built
// once; the rest is computed per pixel without libm calls.
#include <algorithm>
#include <cstdint>

#include "daemon/image/color_jitter.h"

// Pillow's float expressions, evaluated as written: no fused multiply-add.
#pragma STDC FP_CONTRACT OFF

namespace stoker {
namespace {

inline uint8_t Clip8(int v) {
  return static_cast<uint8_t>(v <= 0 ? 0 : v < 256 ? v : 255);
}

// C's round() for x >= 0 (half away from zero): x - trunc(x) is exact.
inline int RoundHalfUp(double x) {
  const int whole = int(x);
  return whole + (x - double(whole) >= 0.5 ? 1 : 0);
}

// rgb2hsv_row's H for a pixel whose channels are not all equal.
inline uint8_t Hue(int r, int g, int b, int maxc, float cr) {
  float h;
  if (r == maxc) {
    h = float(maxc - b) / cr - float(maxc - g) / cr;
  } else if (g == maxc) {
    h = float(2.0 + float(maxc - r) / cr - float(maxc - b) / cr);
  } else {
    h = float(4.0 + float(maxc - g) / cr - float(maxc - r) / cr);
  }
  // fmod(h / 6.0 + 1.0, 1.0) for a value in [5/6, 11/6): exact either way.
  const double wrapped = double(h) / 6.0 + 1.0;
  h = float(wrapped >= 1.0 ? wrapped - 1.0 : wrapped);
  return Clip8(int(double(h) * 255.0));
}

// Pillow's H depends only on which channel is the (first) largest, which of
// the other two is the smallest, and the differences max - channel: a
// table of 6 x 256 x 256 bytes replaces its divisions.
struct HueKey {
  int variant;  // 2 * largest channel + which of the other two is smallest
  int mid;      // max - the other channel
};

inline HueKey KeyOf(int r, int g, int b, int maxc, int minc) {
  if (r == maxc) {
    return b == minc ? HueKey{0, maxc - g} : HueKey{1, maxc - b};
  }
  if (g == maxc) {
    return b == minc ? HueKey{2, maxc - r} : HueKey{3, maxc - b};
  }
  return g == minc ? HueKey{4, maxc - r} : HueKey{5, maxc - g};
}

struct HueTables {
  uint8_t hue[6][256][256];      // [variant][mid][max - min]: H
  uint8_t saturation[256][256];  // [max][max - min]: S
  uint8_t p[256][256];           // [v][s]: v * (1 - s / 255), rounded
  float fs[256];                 // s / 255
  uint8_t sector[256];           // floor(h * 6 / 255)
  float fraction[256];           // h * 6 / 255 - sector
};

const HueTables& Tables() {
  static const HueTables* const tables = [] {
    auto* t = new HueTables;
    for (int maxc = 0; maxc < 256; ++maxc) {
      for (int cr = 0; cr < 256; ++cr) {
        const float s = maxc == 0 ? 0.0f : float(cr) / float(maxc);
        t->saturation[maxc][cr] = Clip8(int(double(s) * 255.0));
      }
    }
    for (int s = 0; s < 256; ++s) t->fs[s] = float(double(float(s)) / 255.0);
    for (int v = 0; v < 256; ++v) {
      for (int s = 0; s < 256; ++s) {
        t->p[v][s] = Clip8(RoundHalfUp(double(float(v)) * (1.0 - t->fs[s])));
      }
    }
    // A pixel of each key: max 255, the smallest 255 - cr, the other
    // 255 - mid. Pillow's arithmetic sees only those differences.
    for (int variant = 0; variant < 6; ++variant) {
      const int largest = variant / 2;
      const int other[2] = {largest == 0 ? 1 : 0, largest == 2 ? 1 : 2};
      const int smallest = variant % 2 == 0 ? other[1] : other[0];
      const int middle = variant % 2 == 0 ? other[0] : other[1];
      for (int cr = 1; cr < 256; ++cr) {
        for (int mid = 0; mid <= cr; ++mid) {
          int c[3];
          c[largest] = 255;
          c[smallest] = 255 - cr;
          c[middle] = 255 - mid;
          t->hue[variant][mid][cr] = Hue(c[0], c[1], c[2], 255, float(cr));
        }
      }
    }
    for (int h = 0; h < 256; ++h) {
      const double x = double(float(h)) * 6.0 / 255.0;
      const int i = int(x);  // floor, as x >= 0
      t->sector[h] = uint8_t(i % 6);
      t->fraction[h] = float(x - double(float(i)));
    }
    return t;
  }();
  return *tables;
}

void ShiftHue(const HueTables& t, uint8_t shift, uint8_t* r, uint8_t* g,
              uint8_t* b) {
  const int maxc = std::max(*r, std::max(*g, *b));
  const int minc = std::min(*r, std::min(*g, *b));
  if (minc == maxc) return;  // H = S = 0: grey stays grey, V unchanged
  const int cr = maxc - minc;
  const uint8_t s = t.saturation[maxc][cr];
  const uint8_t v = uint8_t(maxc);
  if (s == 0) {
    *r = *g = *b = v;
    return;
  }
  const HueKey key = KeyOf(*r, *g, *b, maxc, minc);
  const uint8_t h = uint8_t(t.hue[key.variant][key.mid][cr] + shift);
  const float f = t.fraction[h];
  const float fs = t.fs[s];
  const uint8_t p = t.p[v][s];
  const uint8_t q = Clip8(RoundHalfUp(double(float(v)) * (1.0 - fs * f)));
  const uint8_t u =
      Clip8(RoundHalfUp(double(float(v)) * (1.0 - fs * (1.0 - f))));
  switch (t.sector[h]) {
    case 0:
      *r = v, *g = u, *b = p;
      break;
    case 1:
      *r = q, *g = v, *b = p;
      break;
    case 2:
      *r = p, *g = v, *b = u;
      break;
    case 3:
      *r = p, *g = q, *b = v;
      break;
    case 4:
      *r = u, *g = p, *b = v;
      break;
    default:
      *r = v, *g = p, *b = q;
      break;
  }
}

}  // namespace

uint8_t HueShift(double hue_factor) {
  return static_cast<uint8_t>(static_cast<int>(hue_factor * 255.0));
}

void AdjustHue(uint8_t* planes, size_t n, uint8_t shift) {
  const HueTables& t = Tables();
  uint8_t* r = planes;
  uint8_t* g = planes + n;
  uint8_t* b = planes + 2 * n;
  for (size_t i = 0; i < n; ++i) ShiftHue(t, shift, &r[i], &g[i], &b[i]);
}

}  // namespace stoker
