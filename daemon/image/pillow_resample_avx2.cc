// AVX2 versions of the resampler's inner loops (see
// pillow_resample_kernels.h): 32-bit products and sums exactly as the
// portable loops make them, eight or four at a time.
#include <immintrin.h>

#include <cstring>

#include "daemon/image/pillow_resample_kernels.h"

namespace stoker::resample_internal {
namespace {

#define STOKER_AVX2 __attribute__((target("avx2")))

// Four sums (R, G, B, unused) to 3 bytes at out.
STOKER_AVX2 inline void StorePixel(__m128i sums, uint8_t* out) {
  const __m128i shifted = _mm_srai_epi32(sums, kPrecisionBits);
  const __m128i words = _mm_packs_epi32(shifted, shifted);
  const uint32_t bytes =
      static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(words, words)));
  std::memcpy(out, &bytes, 3);
}

}  // namespace

STOKER_AVX2 void HorizontalRowAvx2(const uint8_t* in, int in_width,
                                   const AxisWeights& w, int count,
                                   uint8_t* out) {
  // Two taps a step: pixels t and t + 1 (6 bytes of an 8-byte load) spread
  // to R G B 0 | R G B 0 in 32-bit lanes.
  const __m128i spread =
      _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const int row_bytes = 3 * in_width;
  for (int j = 0; j < count; ++j) {
    const int start = w.start[j];
    const int taps = w.taps[j];
    const int32_t* k = &w.weights[static_cast<size_t>(j) * w.ksize];
    // Taps in pairs (an odd count's last pair has a zero weight); the last
    // pair's 8-byte load must stay inside the row.
    const int pairs = (taps + 1) / 2;
    if (3 * (start + 2 * pairs) + 2 > row_bytes) {
      HorizontalPixel(in + 3 * start, k, taps, out + 3 * j);
      continue;
    }
    __m256i sums = _mm256_setzero_si256();
    const uint8_t* p = in + 3 * start;
    for (int q = 0; q < pairs; ++q, p += 6) {
      const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      const __m256i px = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(raw, spread));
      const __m256i kk = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_set1_epi32(k[2 * q])),
          _mm_set1_epi32(k[2 * q + 1]), 1);
      sums = _mm256_add_epi32(sums, _mm256_mullo_epi32(px, kk));
    }
    __m128i total = _mm_add_epi32(_mm256_castsi256_si128(sums),
                                  _mm256_extracti128_si256(sums, 1));
    total = _mm_add_epi32(total, _mm_set1_epi32(1 << (kPrecisionBits - 1)));
    StorePixel(total, out + 3 * j);
  }
}

STOKER_AVX2 void VerticalRowAvx2(const uint8_t* rows, int stride, int first_row,
                                 const AxisWeights& w, int i, int bytes,
                                 uint8_t* out) {
  const int32_t* k = &w.weights[static_cast<size_t>(i) * w.ksize];
  const int taps = w.taps[i];
  const uint8_t* top =
      rows + static_cast<size_t>(w.start[i] - first_row) * stride;
  const __m256i bias = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int b = 0;
  for (; b + 32 <= bytes; b += 32) {
    __m256i a0 = bias, a1 = bias, a2 = bias, a3 = bias;
    const uint8_t* p = top + b;
    for (int t = 0; t < taps; ++t, p += stride) {
      const __m256i kt = _mm256_set1_epi32(k[t]);
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m128i lo = _mm256_castsi256_si128(v);
      const __m128i hi = _mm256_extracti128_si256(v, 1);
      a0 = _mm256_add_epi32(a0,
                            _mm256_mullo_epi32(_mm256_cvtepu8_epi32(lo), kt));
      a1 = _mm256_add_epi32(
          a1,
          _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), kt));
      a2 = _mm256_add_epi32(a2,
                            _mm256_mullo_epi32(_mm256_cvtepu8_epi32(hi), kt));
      a3 = _mm256_add_epi32(
          a3,
          _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), kt));
    }
    // Shift, saturate to 0..255 (Pillow's clip8), back in order.
    const __m256i s01 =
        _mm256_packs_epi32(_mm256_srai_epi32(a0, kPrecisionBits),
                           _mm256_srai_epi32(a1, kPrecisionBits));
    const __m256i s23 =
        _mm256_packs_epi32(_mm256_srai_epi32(a2, kPrecisionBits),
                           _mm256_srai_epi32(a3, kPrecisionBits));
    const __m256i packed =
        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(s01, s23), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b), packed);
  }
  for (; b < bytes; ++b) {
    int s = 1 << (kPrecisionBits - 1);
    const uint8_t* p = top + b;
    for (int t = 0; t < taps; ++t, p += stride) s += *p * k[t];
    out[b] = Clip8(s);
  }
}

}  // namespace stoker::resample_internal
