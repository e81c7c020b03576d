#include "daemon/image/pillow_blur.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace stoker {
namespace {

// One box-blur line of Pillow (ImagingLineBoxBlur8): `acc` holds the
// window's integer sum, the two pixels just outside it count fw each, and
// the result is rounded from 8.24 fixed point. Unsigned arithmetic wraps
// as Pillow's does (a window's sum never exceeds 255 << 24).
struct BoxLine {
  int radius;
  uint32_t ww, fw;

  void Run(const uint8_t* in, uint8_t* out, int size) const {
    const int last = size - 1;
    const int edge_a = std::min(radius + 1, size);
    const int edge_b = std::max(size - radius - 1, 0);
    uint32_t acc = in[0] * uint32_t(radius + 1);
    for (int x = 0; x < edge_a - 1; ++x) acc += in[x];
    acc += in[last] * uint32_t(radius - edge_a + 1);
    auto step = [&](int x, int subtract, int add, int left, int right) {
      acc += uint32_t(int(in[add]) - int(in[subtract]));
      const uint32_t bulk = acc * ww + (uint32_t(in[left]) + in[right]) * fw;
      out[x] = uint8_t((bulk + (1u << 23)) >> 24);
    };
    if (edge_a <= edge_b) {
      for (int x = 0; x < edge_a; ++x)
        step(x, 0, x + radius, 0, x + radius + 1);
      for (int x = edge_a; x < edge_b; ++x) {
        step(x, x - radius - 1, x + radius, x - radius - 1, x + radius + 1);
      }
      for (int x = edge_b; x <= last; ++x) {
        step(x, x - radius - 1, last, x - radius - 1, last);
      }
    } else {
      for (int x = 0; x < edge_b; ++x)
        step(x, 0, x + radius, 0, x + radius + 1);
      for (int x = edge_b; x < edge_a; ++x) step(x, 0, last, 0, last);
      for (int x = edge_a; x <= last; ++x) {
        step(x, x - radius - 1, last, x - radius - 1, last);
      }
    }
  }
};

// Pillow's ImagingHorizontalBoxBlur's constants for a float radius.
BoxLine LineFor(float radius) {
  BoxLine line;
  line.radius = int(radius);
  line.ww = uint32_t(float(1u << 24) / (radius * 2 + 1));
  line.fw = ((1u << 24) - uint32_t(line.radius * 2 + 1) * line.ww) / 2;
  return line;
}

// `passes` box blurs of each of `rows` rows of `width` pixels, in place.
void BlurRows(const BoxLine& line, int passes, uint8_t* plane, int width,
              int rows, uint8_t* spare) {
  for (int y = 0; y < rows; ++y) {
    uint8_t* row = plane + size_t(y) * width;
    for (int i = 0; i < passes; ++i) {
      line.Run(row, spare, width);
      std::memcpy(row, spare, width);
    }
  }
}

void Transpose(const uint8_t* in, int width, int height, uint8_t* out) {
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      out[size_t(x) * height + y] = in[size_t(y) * width + x];
    }
  }
}

}  // namespace

float PillowBoxRadius(float radius, int passes) {
#pragma clang fp contract(off)
  const float sigma2 = radius * radius / float(passes);
  const float big_l = float(std::sqrt(12.0 * sigma2 + 1.0));
  const float l = float(std::floor((big_l - 1.0) / 2.0));
  float a = (2 * l + 1) * (l * (l + 1) - 3 * sigma2);
  a /= 6 * (sigma2 - (l + 1) * (l + 1));
  return l + a;
}

void ApplyPillowBlur(float radius, ImageSize size, uint8_t* planes,
                     std::vector<uint8_t>* scratch) {
  const float box = PillowBoxRadius(radius, kPillowBlurPasses);
  if (box == 0) return;  // Pillow copies the image
  const BoxLine line = LineFor(box);
  const int w = size.width, h = size.height;
  const size_t n = size.Pixels();
  scratch->resize(n + std::max(w, h));
  uint8_t* transposed = scratch->data();
  uint8_t* spare = transposed + n;
  for (int c = 0; c < 3; ++c) {
    uint8_t* plane = planes + c * n;
    BlurRows(line, kPillowBlurPasses, plane, w, h, spare);
    // The columns as rows of the transposed plane, as Pillow does them.
    Transpose(plane, w, h, transposed);
    BlurRows(line, kPillowBlurPasses, transposed, h, w, spare);
    Transpose(transposed, h, w, plane);
  }
}

}  // namespace stoker
