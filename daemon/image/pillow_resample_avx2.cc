// AVX2 versions of the resampler's inner loops (see
// pillow_resample_kernels.h): 16-bit products of split weights, summed and
// recombined to exactly the 32-bit sums of the portable loops.
#include <immintrin.h>

#include <cstring>

#include "daemon/image/pillow_resample_kernels.h"

namespace stoker::resample_internal {
namespace {

#define STOKER_AVX2 __attribute__((target("avx2")))

// Output pixel j's sums over its taps, four a step as 16-bit products
// (hi and lo parts of each weight, recombined exactly): lanes 0-3 hold
// R G B - of taps t0, t1, lanes 4-7 those of t2, t3.
STOKER_AVX2 inline __m256i PixelSums(const uint8_t* p, const int16_t* split,
                                     int quads) {
  // Bytes of pixels t0..t3 to 16-bit [R0 R1 G0 G1 B0 B1 0 0] and
  // [R2 R3 G2 G3 B2 B3 0 0].
  const __m256i spread = _mm256_setr_epi8(
      0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
      6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  __m256i hi = _mm256_setzero_si256();
  __m256i lo = _mm256_setzero_si256();
  for (int q = 0; q < quads; ++q, p += 12, split += 32) {
    const __m256i px = _mm256_shuffle_epi8(
        _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
        spread);
    hi = _mm256_add_epi32(
        hi,
        _mm256_madd_epi16(
            px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(split))));
    lo = _mm256_add_epi32(
        lo, _mm256_madd_epi16(
                px, _mm256_loadu_si256(
                        reinterpret_cast<const __m256i*>(split + 16))));
  }
  return _mm256_add_epi32(_mm256_slli_epi32(hi, 11), lo);
}

// Two pixels' lanes (t0 t1 | t2 t3 each) to [first | second] R G B -.
STOKER_AVX2 inline __m256i PairSums(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                          _mm256_permute2x128_si256(a, b, 0x31));
}

// Four pixels' sums (lanes [j, j+2 | j+1, j+3]) to 12 bytes R G B R G B ...
// at `out`, rounded and clipped as Pillow's clip8; `room` is how many bytes
// may be written there.
STOKER_AVX2 inline void StoreFour(__m256i s01, __m256i s23, uint8_t* out,
                                  int room) {
  const __m256i bias = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  // Four pixels' R G B - to 12 bytes R G B R G B ...
  const __m128i pack =
      _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  s01 = _mm256_srai_epi32(_mm256_add_epi32(s01, bias), kPrecisionBits);
  s23 = _mm256_srai_epi32(_mm256_add_epi32(s23, bias), kPrecisionBits);
  // Saturating packs clip to 0..255.
  const __m256i words = _mm256_packs_epi32(s01, s23);
  const __m256i bytes = _mm256_packus_epi16(words, words);
  const __m128i ordered = _mm_unpacklo_epi32(
      _mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
  const __m128i rgb = _mm_shuffle_epi8(ordered, pack);
  if (room >= 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), rgb);
  } else {
    alignas(16) uint8_t last[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(last), rgb);
    std::memcpy(out, last, 12);
  }
}

// How many leading output pixels, in fours, the vector loop takes: those
// whose loads (16 bytes from each group of 4 taps) stay inside the row.
// Each of the four is checked: a pixel's taps may end further right than
// its successor's where their count falls near the edge.
int VectorEnd(const AxisWeights& w, int origin, int in_width, int count) {
  const int row_bytes = 3 * in_width;
  auto fits = [&](int j) {
    const int used = (w.taps[j] + 3) / 4;
    return used == 0 ||
           3 * (w.start[j] - origin + 4 * (used - 1)) + 16 <= row_bytes;
  };
  int j = 0;
  for (; j + 3 < count; j += 4) {
    if (!fits(j) || !fits(j + 1) || !fits(j + 2) || !fits(j + 3)) break;
  }
  return j;
}

}  // namespace

STOKER_AVX2 void HorizontalRowsAvx2(const uint8_t* in, size_t in_stride,
                                    int rows, int origin, int in_width,
                                    const AxisWeights& w, int count,
                                    uint8_t* out, size_t out_stride) {
  // Worked out once for all rows: where the vector loop ends, and whether
  // its pixels all have 1 to 4 taps (one step each, the common case of a
  // shrink by less than 1.5).
  const int end = VectorEnd(w, origin, in_width, count);
  const int quads = w.ksize / 4;
  bool one_step = true;
  for (int j = 0; j < end; ++j) {
    one_step = one_step && w.taps[j] >= 1 && w.taps[j] <= 4;
  }
  const int out_bytes = 3 * count;
  for (int r = 0; r < rows; ++r, in += in_stride, out += out_stride) {
    const int16_t* split = w.split.data();
    int j = 0;
    if (one_step) {
      for (; j < end; j += 4, split += 4 * quads * 32) {
        const int* s = &w.start[j];
        const __m256i s01 = PairSums(
            PixelSums(in + 3 * (s[0] - origin), split, 1),
            PixelSums(in + 3 * (s[1] - origin), split + quads * 32, 1));
        const __m256i s23 = PairSums(
            PixelSums(in + 3 * (s[2] - origin), split + 2 * quads * 32, 1),
            PixelSums(in + 3 * (s[3] - origin), split + 3 * quads * 32, 1));
        StoreFour(s01, s23, out + 3 * j, out_bytes - 3 * j);
      }
    } else {
      for (; j < end; j += 4, split += 4 * quads * 32) {
        __m256i sums[4];
        for (int k = 0; k < 4; ++k) {
          sums[k] = PixelSums(in + 3 * (w.start[j + k] - origin),
                              split + k * quads * 32, (w.taps[j + k] + 3) / 4);
        }
        StoreFour(PairSums(sums[0], sums[1]), PairSums(sums[2], sums[3]),
                  out + 3 * j, out_bytes - 3 * j);
      }
    }
    for (; j < count; ++j) {
      HorizontalPixel(in + 3 * (w.start[j] - origin),
                      &w.weights[static_cast<size_t>(j) * w.ksize], w.taps[j],
                      out + 3 * j);
    }
  }
}

namespace {

// One 32-bit lane of two taps' 16-bit weight parts, for _mm256_madd_epi16.
inline int32_t WeightPair(int32_t first, int32_t second) {
  return static_cast<int32_t>(static_cast<uint32_t>(uint16_t(first)) |
                              static_cast<uint32_t>(uint16_t(second)) << 16);
}

// A pair of taps' weights for _mm256_madd_epi16, each weight split as
// k = hi * 32768 + lo (lo in [0, 32768), so both parts are int16).
struct TapPair {
  __m256i lo;
  __m256i hi;
};

STOKER_AVX2 inline TapPair PairOf(const int32_t* k, int t, int taps) {
  const int32_t k1 = t + 1 < taps ? k[t + 1] : 0;
  return {_mm256_set1_epi32(WeightPair(k[t] & 0x7fff, k1 & 0x7fff)),
          _mm256_set1_epi32(WeightPair(k[t] >> 15, k1 >> 15))};
}

// Sixteen output bytes of a vertical pass: two source rows a step,
// interleaved as 16-bit pairs and multiplied by the split weights (from
// `pairs`, or split from `k` as they are used where pairs is null); the
// sums recombine exactly to the 32-bit sums of the portable loop.
STOKER_AVX2 inline __m128i VerticalSixteen(const uint8_t* p, int stride,
                                           const TapPair* pairs,
                                           const int32_t* k, int taps) {
  __m256i lo0 = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  __m256i lo1 = lo0;
  __m256i hi0 = _mm256_setzero_si256();
  __m256i hi1 = hi0;
  for (int t = 0; t < taps; t += 2, p += 2 * stride) {
    const TapPair w = pairs != nullptr ? pairs[t / 2] : PairOf(k, t, taps);
    const __m256i x = _mm256_cvtepu8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i y = t + 1 < taps
                          ? _mm256_cvtepu8_epi16(_mm_loadu_si128(
                                reinterpret_cast<const __m128i*>(p + stride)))
                          : _mm256_setzero_si256();
    const __m256i xy0 = _mm256_unpacklo_epi16(x, y);  // bytes 0-3, 8-11
    const __m256i xy1 = _mm256_unpackhi_epi16(x, y);  // bytes 4-7, 12-15
    lo0 = _mm256_add_epi32(lo0, _mm256_madd_epi16(xy0, w.lo));
    lo1 = _mm256_add_epi32(lo1, _mm256_madd_epi16(xy1, w.lo));
    hi0 = _mm256_add_epi32(hi0, _mm256_madd_epi16(xy0, w.hi));
    hi1 = _mm256_add_epi32(hi1, _mm256_madd_epi16(xy1, w.hi));
  }
  const __m256i s0 = _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_slli_epi32(hi0, 15), lo0), kPrecisionBits);
  const __m256i s1 = _mm256_srai_epi32(
      _mm256_add_epi32(_mm256_slli_epi32(hi1, 15), lo1), kPrecisionBits);
  // Saturate to 0..255 (Pillow's clip8); each 128-bit lane holds 8 bytes
  // in order.
  const __m256i bytes =
      _mm256_packus_epi16(_mm256_packs_epi32(s0, s1), _mm256_setzero_si256());
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(bytes, 0x08));
}

}  // namespace

STOKER_AVX2 void VerticalRowAvx2(const uint8_t* rows, int stride, int first_row,
                                 const AxisWeights& w, int i, int bytes,
                                 uint8_t* out) {
  const int32_t* k = &w.weights[static_cast<size_t>(i) * w.ksize];
  const int taps = w.taps[i];
  const uint8_t* top =
      rows + static_cast<size_t>(w.start[i] - first_row) * stride;
  // The row's weight pairs, split once for all its bytes where they fit
  // here (up to 128 taps; a shrink by 64 or more splits them as it goes).
  constexpr int kMaxPairs = 64;
  TapPair pairs[kMaxPairs];
  const bool kept = taps <= 2 * kMaxPairs;
  if (kept) {
    for (int t = 0; t < taps; t += 2) pairs[t / 2] = PairOf(k, t, taps);
  }
  int b = 0;
  for (; b + 16 <= bytes; b += 16) {
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out + b),
        VerticalSixteen(top + b, stride, kept ? pairs : nullptr, k, taps));
  }
  for (; b < bytes; ++b) {
    int s = 1 << (kPrecisionBits - 1);
    const uint8_t* p = top + b;
    for (int t = 0; t < taps; ++t, p += stride) s += *p * k[t];
    out[b] = Clip8(s);
  }
}

}  // namespace stoker::resample_internal
