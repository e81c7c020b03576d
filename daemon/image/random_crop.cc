#include "daemon/image/random_crop.h"

#include <algorithm>
#include <numeric>

#include "daemon/image/counter_random.h"

namespace stoker {
namespace {

// numpy.pad(v, (lo, hi), mode) for reflect ("symmetric" includes the edge),
// step for step as numpy's _set_reflect_both: chunks no longer than what is
// already filled, so wide pads reflect the padding too; from numpy 2.1
// (`whole_periods`) cut down to whole periods of the image. The image has
// two pixels or more here.
void ReflectAxis(std::vector<int>* v, int lo, int hi, bool symmetric,
                 bool whole_periods) {
  std::vector<int>& p = *v;
  const int edge_offset = symmetric ? 1 : 0;
  const int period = int(p.size()) - lo - hi;
  while (lo > 0 || hi > 0) {
    int old_length = int(p.size()) - lo - hi;
    if (whole_periods) {
      old_length = symmetric
                       ? old_length / period * period
                       : (old_length - 1) / (period - 1) * (period - 1) + 1;
    }
    if (!symmetric) --old_length;
    if (lo > 0) {
      const int chunk = std::min(old_length, lo);
      // padded[lo - chunk .. lo) = padded[stop + chunk .. stop] reversed,
      // stop = lo - edge_offset.
      const int stop = lo - edge_offset;
      for (int i = 0; i < chunk; ++i) p[lo - chunk + i] = p[stop + chunk - i];
      lo -= chunk;
    }
    if (hi > 0) {
      const int n = int(p.size());
      const int chunk = std::min(old_length, hi);
      const int start = n - hi + edge_offset - 2;  // read leftwards from here
      for (int i = 0; i < chunk; ++i) p[n - hi + i] = p[start - i];
      hi -= chunk;
    }
  }
}

// v padded by (lo, hi) as torchvision pads a PIL image in `mode`; a
// constant pad's cells are `fill_code`.
std::vector<int> PadAxis(const std::vector<int>& v, int lo, int hi,
                         PadMode mode, int fill_code, bool whole_periods) {
  if (lo == 0 && hi == 0) return v;
  std::vector<int> p(lo + v.size() + hi, fill_code);
  std::copy(v.begin(), v.end(), p.begin() + lo);
  // numpy pads a length-1 axis in reflect mode by repeating its edge.
  if (mode == PadMode::kEdge || (mode != PadMode::kConstant && v.size() == 1)) {
    std::fill(p.begin(), p.begin() + lo, v.front());
    std::fill(p.end() - hi, p.end(), v.back());
  } else if (mode != PadMode::kConstant) {
    ReflectAxis(&p, lo, hi, mode == PadMode::kSymmetric, whole_periods);
  }
  return p;
}

// The axis after every pad: `pad`, `padding`, then pad_if_needed's
// (need - length) on both sides.
std::vector<int> PaddedAxis(const RandomCropSpec& spec, int length, int need,
                            bool horizontal, bool flipped) {
  std::vector<int> v(length);
  std::iota(v.begin(), v.end(), 0);
  const PadSpec& a = spec.pad;
  const PadSpec& b = spec.padding;
  v = PadAxis(v, horizontal ? a.left : a.top, horizontal ? a.right : a.bottom,
              a.mode, kFillPad, spec.whole_periods);
  v = PadAxis(v, horizontal ? b.left : b.top, horizontal ? b.right : b.bottom,
              b.mode, kFillPadding, spec.whole_periods);
  if (spec.pad_if_needed && int(v.size()) < need) {
    const int d = need - int(v.size());
    // End padding of a flipped image: its right, here its left.
    const int lo = !spec.pad_end ? d : horizontal && flipped ? d : 0;
    const int hi = !spec.pad_end ? d : horizontal && flipped ? 0 : d;
    v = PadAxis(v, lo, hi, b.mode, kFillPadding, spec.whole_periods);
  }
  return v;
}

// The span of pixel indices in `v` (empty when it reads only fill).
void Span(const std::vector<int>& v, int* lo, int* hi) {
  *lo = 1 << 30;
  *hi = -1;
  for (int i : v) {
    if (i >= 0) {
      *lo = std::min(*lo, i);
      *hi = std::max(*hi, i);
    }
  }
}

}  // namespace

CropParams DrawRandomCrop(const RandomCropSpec& spec, ImageSize stage,
                          ImageSize output, uint64_t key, bool flipped,
                          CropMaps* maps) {
  CropParams c;
  c.stage = stage;
  c.touched = {0, 0, 1, 1};
  if (stage.width < 1 || stage.height < 1 || stage.width > kMaxCropStage ||
      stage.height > kMaxCropStage) {
    c.fits = false;
    c.too_large = true;
    c.padded = stage;
    return c;
  }
  const bool mirrored = flipped && spec.after_flip;
  std::vector<int> xs =
      PaddedAxis(spec, stage.width, output.width, true, mirrored);
  std::vector<int> ys =
      PaddedAxis(spec, stage.height, output.height, false, false);
  c.padded = {int(xs.size()), int(ys.size())};
  c.fits = c.padded.width >= output.width && c.padded.height >= output.height;
  if (!c.fits) return c;
  if (c.padded.width != output.width || c.padded.height != output.height) {
    uint64_t k = 0;
    c.top = int(UniformBelow(key, &k, c.padded.height - output.height + 1));
    c.left = int(UniformBelow(key, &k, c.padded.width - output.width + 1));
  }
  maps->xs.assign(xs.begin() + c.left, xs.begin() + c.left + output.width);
  maps->ys.assign(ys.begin() + c.top, ys.begin() + c.top + output.height);
  int x0, x1, y0, y1;
  Span(maps->xs, &x0, &x1);
  Span(maps->ys, &y0, &y1);
  // A crop of fill alone still decodes one pixel (the file is checked).
  if (x1 >= 0 && y1 >= 0) c.touched = {x0, y0, x1 - x0 + 1, y1 - y0 + 1};
  return c;
}

void ApplyRandomCrop(const RandomCropSpec& spec, const CropMaps& maps,
                     const Region& touched, const uint8_t* touched_planes,
                     ImageSize output, uint8_t* out) {
  const size_t in_plane = size_t(touched.width) * touched.height;
  const size_t out_plane = output.Pixels();
  for (int c = 0; c < 3; ++c) {
    const uint8_t* src = touched_planes + c * in_plane;
    uint8_t* dst = out + c * out_plane;
    const uint8_t fills[2] = {spec.pad.fill[c], spec.padding.fill[c]};
    for (int y = 0; y < output.height; ++y) {
      const int sy = maps.ys[y];
      uint8_t* row = dst + size_t(y) * output.width;
      const uint8_t* in =
          sy < 0 ? nullptr : src + size_t(sy - touched.y) * touched.width;
      for (int x = 0; x < output.width; ++x) {
        const int sx = maps.xs[x];
        // Where both are fill, the later (outer) pad's fill shows.
        row[x] = sx >= 0 && sy >= 0 ? in[sx - touched.x]
                                    : fills[-1 - std::min(sx, sy)];
      }
    }
  }
}

}  // namespace stoker
