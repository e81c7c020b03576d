#include "daemon/image/pillow_resample.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>

#include "daemon/image/pillow_resample_kernels.h"

// The weights must come out of the same double arithmetic as Pillow's (no
// fused multiply-add, no reassociation): exactness depends on it.
#pragma STDC FP_CONTRACT OFF

namespace stoker {
namespace {

using resample_internal::kPrecisionBits;

double Bilinear(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

double Bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

int32_t ToFixed(double w) {
  const double scaled = w * (1 << kPrecisionBits);
  return static_cast<int32_t>(w < 0 ? -0.5 + scaled : 0.5 + scaled);
}

// AxisWeights::split from AxisWeights::weights (see there).
void SplitWeights(AxisWeights* w) {
  const int quads = w->ksize / 4;
  const size_t outputs = w->start.size();
  w->split.resize(outputs * quads * 32);
  int16_t* to = w->split.data();
  for (size_t i = 0; i < outputs; ++i) {
    const int32_t* k = &w->weights[i * w->ksize];
    for (int q = 0; q < quads; ++q, to += 32, k += 4) {
      for (int half = 0; half < 2; ++half) {
        for (int c = 0; c < 4; ++c) {
          for (int t = 0; t < 2; ++t) {
            const int32_t v = k[2 * half + t];
            to[8 * half + 2 * c + t] = static_cast<int16_t>(v >> 11);
            to[16 + 8 * half + 2 * c + t] = static_cast<int16_t>(v & 2047);
          }
        }
      }
    }
  }
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Whether Pillow runs the horizontal and the vertical pass: only where they
// change pixels (ImagingResampleInner).
bool NeedsHorizontal(ImageSize size, ResampleBox box, ImageSize out_size) {
  return out_size.width != size.width || box.x0 != 0 ||
         box.x1 != static_cast<float>(out_size.width);
}
bool NeedsVertical(ImageSize size, ResampleBox box, ImageSize out_size) {
  return out_size.height != size.height || box.y0 != 0 ||
         box.y1 != static_cast<float>(out_size.height);
}

// [first, end) of the valid entries of Pillow's NEAREST indices.
void IndexRange(const std::vector<int>& indices, int* first, int* end) {
  *first = 0;
  *end = 0;
  bool any = false;
  for (int index : indices) {
    if (index < 0) continue;
    *first = any ? std::min(*first, index) : index;
    *end = std::max(*end, index + 1);
    any = true;
  }
}

// Pixel `column` of `row` as the low three bytes of a word (the load reads
// a fourth byte, which the caller has checked lies inside the row).
inline uint64_t PixelWord(const uint8_t* row, int column) {
  uint32_t pixel;
  std::memcpy(&pixel, row + 3 * column, 4);
  return pixel & 0xffffff;
}

// One output row of NEAREST: columns[j] is the source column of output
// pixel j (-1 outside the image: black; columns never decrease). Inside,
// four pixels at a time are gathered as words and stored as 12 bytes.
void NearestRow(const uint8_t* row, int row_bytes, const int* columns,
                int width, uint8_t* out) {
  int begin = 0, end = width;
  while (begin < end && columns[begin] < 0) ++begin;
  while (end > begin && columns[end - 1] < 0) --end;
  std::memset(out, 0, 3 * static_cast<size_t>(begin));
  std::memset(out + 3 * end, 0, 3 * static_cast<size_t>(width - end));
  // Word loads need a byte after the pixel: the last pixel of the row has
  // none.
  int fast_end = end;
  while (fast_end > begin && 3 * columns[fast_end - 1] + 4 > row_bytes) {
    --fast_end;
  }
  int j = begin;
  for (; j + 4 <= fast_end; j += 4) {
    const uint64_t p0 = PixelWord(row, columns[j]);
    const uint64_t p1 = PixelWord(row, columns[j + 1]);
    const uint64_t p2 = PixelWord(row, columns[j + 2]);
    const uint64_t p3 = PixelWord(row, columns[j + 3]);
    const uint64_t first = p0 | p1 << 24 | p2 << 48;
    const uint32_t second = static_cast<uint32_t>(p2 >> 16 | p3 << 8);
    std::memcpy(out + 3 * j, &first, 8);
    std::memcpy(out + 3 * j + 8, &second, 4);
  }
  for (; j < end; ++j) std::memcpy(out + 3 * j, row + 3 * columns[j], 3);
}

void NearestResample(const ResampleSource& src, Region have, ResampleBox box,
                     ImageSize out_size, Region window, uint8_t* dst,
                     int dst_stride, ResampleScratch* scratch) {
  ComputeNearestIndices(src.size.width, box.x0, box.x1, out_size.width,
                        window.x, window.width, &scratch->columns);
  ComputeNearestIndices(src.size.height, box.y0, box.y1, out_size.height,
                        window.y, window.height, &scratch->rows);
  // Columns relative to the decoded part; the row's readable bytes.
  for (int& c : scratch->columns) {
    if (c >= 0) c -= have.x;
  }
  const int row_bytes = 3 * have.width;
  const size_t out_bytes = 3 * static_cast<size_t>(window.width);
  for (int i = 0; i < window.height; ++i) {
    uint8_t* out = dst + static_cast<size_t>(i) * dst_stride;
    const int y = scratch->rows[i];
    if (i > 0 && y == scratch->rows[i - 1]) {  // enlarging: a repeated row
      std::memcpy(out, out - dst_stride, out_bytes);
    } else if (y < 0) {
      std::memset(out, 0, out_bytes);
    } else {
      NearestRow(src.pixels + static_cast<size_t>(y - have.y) * src.stride,
                 row_bytes, scratch->columns.data(), window.width, out);
    }
  }
}

}  // namespace

namespace resample_internal {

void HorizontalRowsScalar(const uint8_t* in, size_t in_stride, int rows,
                          int origin, int in_width, const AxisWeights& w,
                          int count, uint8_t* out, size_t out_stride) {
  for (int r = 0; r < rows; ++r, in += in_stride, out += out_stride) {
    for (int j = 0; j < count; ++j) {
      HorizontalPixel(in + 3 * (w.start[j] - origin),
                      &w.weights[static_cast<size_t>(j) * w.ksize], w.taps[j],
                      out + 3 * j);
    }
  }
}

void VerticalRowScalar(const uint8_t* rows, int stride, int first_row,
                       const AxisWeights& w, int i, int bytes, uint8_t* out) {
  const int32_t* k = &w.weights[static_cast<size_t>(i) * w.ksize];
  const uint8_t* top =
      rows + static_cast<size_t>(w.start[i] - first_row) * stride;
  for (int b = 0; b < bytes; ++b) {
    int s = 1 << (kPrecisionBits - 1);
    const uint8_t* p = top + b;
    for (int t = 0; t < w.taps[i]; ++t, p += stride) s += *p * k[t];
    out[b] = Clip8(s);
  }
}

}  // namespace resample_internal

void ComputeAxisWeights(int in_size, float in0, float in1, int out_size,
                        int first, int count, ResampleFilter filter,
                        AxisWeights* out) {
  const AxisWeights::Key key{in_size, in0, in1, out_size, first, count, filter};
  if (out->key == key) return;
  out->key = key;
  double (*const f)(double) =
      filter == ResampleFilter::kBicubic ? Bicubic : Bilinear;
  const double base_support = filter == ResampleFilter::kBicubic ? 2.0 : 1.0;
  // As Pillow: the box's extent in single precision, then double.
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = base_support * filterscale;
  const double inv_filterscale = 1.0 / filterscale;
  // Pillow's most taps, 2 * ceil(support) + 1, rounded up to a multiple of
  // 4 with zeros, so that kernels may take taps in fours.
  out->ksize = (static_cast<int>(std::ceil(support)) * 2 + 1 + 3) / 4 * 4;
  out->start.resize(count);
  out->taps.resize(count);
  out->weights.assign(static_cast<size_t>(count) * out->ksize, 0);
  std::vector<double> k(out->ksize);
  for (int i = 0; i < count; ++i) {
    const int xx = first + i;
    const double center = in0 + (xx + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax =
        std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = f((x + xmin - center + 0.5) * inv_filterscale);
      ww += k[x];
    }
    int32_t* fixed = &out->weights[static_cast<size_t>(i) * out->ksize];
    for (int x = 0; x < xmax; ++x) {
      fixed[x] = ToFixed(ww != 0.0 ? k[x] / ww : k[x]);
    }
    out->start[i] = xmin;
    out->taps[i] = std::max(xmax, 0);
  }
  SplitWeights(out);
}

void ComputeNearestIndices(int in_size, float in0, float in1, int out_size,
                           int first, int count, std::vector<int>* out) {
  // Pillow accumulates the position from output 0 on: so does this, for
  // the same rounding.
  const double step = static_cast<double>(in1 - in0) / out_size;
  double position = in0 + step * 0.5;
  out->resize(count);
  for (int xx = 0; xx < first + count; ++xx, position += step) {
    if (xx < first) continue;
    const int index = position < 0.0 ? -1 : static_cast<int>(position);
    (*out)[xx - first] = index < in_size ? index : -1;
  }
}

Region ResampleFootprint(ImageSize size, ResampleBox box, ImageSize out_size,
                         Region window, ResampleFilter filter,
                         ResampleScratch* scratch) {
  Region r{window.x, window.y, window.width, window.height};
  int end_x = window.x + window.width, end_y = window.y + window.height;
  if (filter == ResampleFilter::kNearest) {
    ComputeNearestIndices(size.width, box.x0, box.x1, out_size.width, window.x,
                          window.width, &scratch->columns);
    ComputeNearestIndices(size.height, box.y0, box.y1, out_size.height,
                          window.y, window.height, &scratch->rows);
    IndexRange(scratch->columns, &r.x, &end_x);
    IndexRange(scratch->rows, &r.y, &end_y);
  } else {
    if (NeedsHorizontal(size, box, out_size)) {
      ComputeAxisWeights(size.width, box.x0, box.x1, out_size.width, window.x,
                         window.width, filter, &scratch->horizontal);
      r.x = scratch->horizontal.start.front();
      end_x =
          scratch->horizontal.start.back() + scratch->horizontal.taps.back();
    }
    if (NeedsVertical(size, box, out_size)) {
      ComputeAxisWeights(size.height, box.y0, box.y1, out_size.height, window.y,
                         window.height, filter, &scratch->vertical);
      r.y = scratch->vertical.start.front();
      end_y = scratch->vertical.start.back() + scratch->vertical.taps.back();
    }
  }
  r.width = std::max(end_x - r.x, 0);
  r.height = std::max(end_y - r.y, 0);
  return r;
}

PassOrder PillowPassOrder(int major, int minor) {
  const auto version = std::make_pair(major, minor);
  if (version >= std::make_pair(13, 0)) return PassOrder::kShrinkVerticalFirst;
  if (version >= std::make_pair(12, 2)) return PassOrder::kTallVerticalFirst;
  return PassOrder::kHorizontalFirst;
}

bool VerticalFirst(PassOrder order, ImageSize image, ImageSize out_size) {
  switch (order) {
    case PassOrder::kHorizontalFirst:
      return false;
    case PassOrder::kTallVerticalFirst:
      return image.height > int64_t{image.width} * 100 &&
             out_size.height < image.height;
    case PassOrder::kShrinkVerticalFirst: {
      const int64_t shrink_y = int64_t{image.height} - out_size.height;
      const int64_t shrink_x = int64_t{image.width} - out_size.width;
      return shrink_y > 0 && shrink_y > 2 * shrink_x;
    }
  }
  return false;
}

namespace {

struct Passes {
  resample_internal::HorizontalFn horizontal;
  resample_internal::VerticalFn vertical;
};

// The window's rows through the horizontal pass, if any, then the
// vertical one, to dst. `rows` points at source row first_row, column
// have.x; rows first_row .. end_row - 1 are read.
void HorizontalThenVertical(const uint8_t* rows, int stride, int first_row,
                            int end_row, Region have, const AxisWeights* h,
                            const AxisWeights* v, Region window,
                            const Passes& passes, uint8_t* dst, int dst_stride,
                            std::vector<uint8_t>* pass) {
  if (h != nullptr) {
    const int pass_stride = 3 * window.width;
    pass->resize(static_cast<size_t>(end_row - first_row) * pass_stride);
    passes.horizontal(rows, stride, end_row - first_row, have.x, have.width, *h,
                      window.width, pass->data(), pass_stride);
    rows = pass->data();
    stride = pass_stride;
  } else {
    rows += 3 * static_cast<ptrdiff_t>(window.x - have.x);
  }
  const int bytes = 3 * window.width;
  for (int i = 0; i < window.height; ++i) {
    uint8_t* out = dst + static_cast<size_t>(i) * dst_stride;
    if (v != nullptr) {
      passes.vertical(rows, stride, first_row, *v, i, bytes, out);
    } else {
      std::memcpy(out, rows + static_cast<size_t>(i) * stride, bytes);
    }
  }
}

// Both passes, the vertical first: over the columns the horizontal pass
// reads (from `columns`, source row first_row, column h.start[0]), then the
// horizontal pass on those rows.
void VerticalThenHorizontal(const uint8_t* columns, int stride, int first_row,
                            const AxisWeights& h, const AxisWeights& v,
                            Region window, const Passes& passes, uint8_t* dst,
                            int dst_stride, std::vector<uint8_t>* pass) {
  const int x0 = h.start.front();
  const int width = h.start.back() + h.taps.back() - x0;
  const int pass_stride = 3 * width;
  pass->resize(static_cast<size_t>(window.height) * pass_stride);
  for (int i = 0; i < window.height; ++i) {
    passes.vertical(columns, stride, first_row, v, i, pass_stride,
                    &(*pass)[static_cast<size_t>(i) * pass_stride]);
  }
  passes.horizontal(pass->data(), pass_stride, window.height, x0, width, h,
                    window.width, dst, dst_stride);
}

}  // namespace

void PillowResample(const ResampleSource& src, ResampleBox box,
                    ImageSize out_size, Region window, ResampleFilter filter,
                    uint8_t* dst, int dst_stride, ResampleScratch* scratch,
                    ResampleKernels kernels) {
  namespace ri = resample_internal;
  const bool avx2 = kernels == ResampleKernels::kBest && HasAvx2();
  const Passes passes{avx2 ? ri::HorizontalRowsAvx2 : ri::HorizontalRowsScalar,
                      avx2 ? ri::VerticalRowAvx2 : ri::VerticalRowScalar};
  const Region have = src.available.width > 0
                          ? src.available
                          : Region{0, 0, src.size.width, src.size.height};
  if (filter == ResampleFilter::kNearest) {
    NearestResample(src, have, box, out_size, window, dst, dst_stride, scratch);
    return;
  }
  const bool horizontal = NeedsHorizontal(src.size, box, out_size);
  const bool vertical = NeedsVertical(src.size, box, out_size);
  AxisWeights& h = scratch->horizontal;
  AxisWeights& v = scratch->vertical;
  ComputeAxisWeights(src.size.height, box.y0, box.y1, out_size.height, window.y,
                     window.height, filter, &v);
  if (horizontal) {
    ComputeAxisWeights(src.size.width, box.x0, box.x1, out_size.width, window.x,
                       window.width, filter, &h);
  }
  // The source rows the window's output rows read, and where they are.
  const int first_row = vertical ? v.start.front() : window.y;
  const int end_row =
      vertical ? v.start.back() + v.taps.back() : window.y + window.height;
  const uint8_t* row =
      src.pixels + static_cast<size_t>(first_row - have.y) * src.stride;
  if (horizontal && vertical && VerticalFirst(src.order, src.size, out_size)) {
    VerticalThenHorizontal(
        row + 3 * static_cast<ptrdiff_t>(h.start.front() - have.x), src.stride,
        first_row, h, v, window, passes, dst, dst_stride, &scratch->pass);
    return;
  }
  HorizontalThenVertical(row, src.stride, first_row, end_row, have,
                         horizontal ? &h : nullptr, vertical ? &v : nullptr,
                         window, passes, dst, dst_stride, &scratch->pass);
}

}  // namespace stoker
