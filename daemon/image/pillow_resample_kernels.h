// The inner loops of the Pillow-exact resampler, in a portable version and
// an AVX2 one chosen at run time. Both do the same integer arithmetic in
// the same order of exact operations, so their bytes are equal (the tests
// run both). Internal to pillow_resample.cc and its tests.
#ifndef STOKER_DAEMON_IMAGE_PILLOW_RESAMPLE_KERNELS_H_
#define STOKER_DAEMON_IMAGE_PILLOW_RESAMPLE_KERNELS_H_

#include <cstdint>

#include "daemon/image/pillow_resample.h"

namespace stoker::resample_internal {

// Pillow's PRECISION_BITS: 8 bits of result, 2 of headroom in an int.
inline constexpr int kPrecisionBits = 32 - 8 - 2;

// Output pixels 0 .. count - 1 of `rows` rows (RGB), each from its row of
// `in` (in_stride bytes apart), which holds in_width RGB pixels of the
// image's row from column `origin` on; out_stride bytes between output
// rows. All rows at once, so that what the weights allow is worked out
// once per resample.
using HorizontalFn = void (*)(const uint8_t* in, size_t in_stride, int rows,
                              int origin, int in_width, const AxisWeights& w,
                              int count, uint8_t* out, size_t out_stride);
// Output row i, `bytes` wide, from `rows` (stride bytes apart; rows[0] is
// source row first_row).
using VerticalFn = void (*)(const uint8_t* rows, int stride, int first_row,
                            const AxisWeights& w, int i, int bytes,
                            uint8_t* out);

void HorizontalRowsScalar(const uint8_t* in, size_t in_stride, int rows,
                          int origin, int in_width, const AxisWeights& w,
                          int count, uint8_t* out, size_t out_stride);
void VerticalRowScalar(const uint8_t* rows, int stride, int first_row,
                       const AxisWeights& w, int i, int bytes, uint8_t* out);
void HorizontalRowsAvx2(const uint8_t* in, size_t in_stride, int rows,
                        int origin, int in_width, const AxisWeights& w,
                        int count, uint8_t* out, size_t out_stride);
void VerticalRowAvx2(const uint8_t* rows, int stride, int first_row,
                     const AxisWeights& w, int i, int bytes, uint8_t* out);

// A sum in fixed point (rounding bias included) to 0..255, as Pillow's
// clip8.
inline uint8_t Clip8(int sum) {
  const int v = sum >> kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One output pixel of the horizontal pass, portably.
inline void HorizontalPixel(const uint8_t* in, const int32_t* k, int taps,
                            uint8_t* out) {
  int s0 = 1 << (kPrecisionBits - 1);
  int s1 = s0;
  int s2 = s0;
  for (int t = 0; t < taps; ++t, in += 3) {
    s0 += in[0] * k[t];
    s1 += in[1] * k[t];
    s2 += in[2] * k[t];
  }
  out[0] = Clip8(s0);
  out[1] = Clip8(s1);
  out[2] = Clip8(s2);
}

}  // namespace stoker::resample_internal

#endif  // STOKER_DAEMON_IMAGE_PILLOW_RESAMPLE_KERNELS_H_
