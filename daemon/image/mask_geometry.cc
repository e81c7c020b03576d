#include "daemon/image/mask_geometry.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/image/random_warp.h"

// Pillow's double arithmetic, as written.
#pragma STDC FP_CONTRACT OFF

namespace stoker {
namespace {

constexpr int kFill = -1;  // an output pixel that no source pixel reaches

// The source index of each output index, through `resize` (indices of the
// resized axis) then `window` (indices of the output into the resized
// axis, or a fill).
std::vector<int> Compose(const std::vector<int>& resize,
                         const std::vector<int>& window) {
  std::vector<int> out(window.size());
  for (size_t i = 0; i < window.size(); ++i) {
    const int at = window[i];
    out[i] = at >= 0 && at < int(resize.size()) ? resize[at] : kFill;
  }
  return out;
}

std::vector<int> Range(int start, int count) {
  std::vector<int> v(count);
  for (int i = 0; i < count; ++i) v[i] = start + i;
  return v;
}

// The output's source columns and rows (before the flips and the warp).
absl::Status AxisMaps(ImageSize size, const Pipeline& p,
                      const SampleParams& params, bool tensor,
                      std::vector<int>* xs, std::vector<int>* ys) {
  const ImageSize o = p.output;
  switch (p.geometry) {
    case Pipeline::Geometry::kRandomResizedCrop: {
      const Region& b = params.box;  // crop, then resize the crop
      *xs = NearestAxis(b.width, o.width, tensor);
      *ys = NearestAxis(b.height, o.height, tensor);
      for (int& x : *xs) x += b.x;
      for (int& y : *ys) y += b.y;
      return absl::OkStatus();
    }
    case Pipeline::Geometry::kRandomCrop: {
      const ImageSize stage = params.crop.stage;
      const bool resized = ResizesBeforeCrop(p);
      *xs = Compose(resized ? NearestAxis(size.width, stage.width, tensor)
                            : Range(0, size.width),
                    params.crop_maps.xs);
      *ys = Compose(resized ? NearestAxis(size.height, stage.height, tensor)
                            : Range(0, size.height),
                    params.crop_maps.ys);
      return absl::OkStatus();
    }
    case Pipeline::Geometry::kResize: {
      const ImageSize r = TorchvisionResizedSize(size, p);
      // Each axis's table is built whole: bounded as a random crop's are
      // (an image of extreme shape could ask for 2^30 a side).
      if (r.width > kMaxCropStage || r.height > kMaxCropStage) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the mask would be resized to ", r.width, "x", r.height,
            " (width x height), above ", kMaxCropStage, " a side"));
      }
      const Region w = p.center_crop ? CenterCropWindow(r, o)
                                     : Region{0, 0, o.width, o.height};
      *xs = Compose(NearestAxis(size.width, r.width, tensor),
                    Range(w.x, o.width));
      *ys = Compose(NearestAxis(size.height, r.height, tensor),
                    Range(w.y, o.height));
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int> NearestAxis(int in, int out, bool tensor) {
  std::vector<int> v(std::max(out, 0));
  if (tensor) {  // aten's nearest_idx
    const float scale = float(in) / float(out);
    for (int i = 0; i < out; ++i) {
      v[i] = out == in ? i
             : out == 2 * in
                 ? i >> 1
                 : std::min(int(std::floor(float(i) * scale)), in - 1);
    }
    return v;
  }
  // ImagingScaleAffine with a = (in / out, 0, 0, 0, in / out, 0): the
  // position starts at half a step and adds a step per pixel.
  const double step = double(in) / out;
  double at = 0.0 + step * 0.5;
  for (int i = 0; i < out; ++i) {
    // Pillow's COORD; the last index is at most in - step / 2.
    v[i] = std::clamp(at < 0.0 ? 0 : int(at), 0, in - 1);
    at += step;
  }
  return v;
}

absl::Status RenderMask(const uint8_t* mask, ImageSize size, const Pipeline& p,
                        const SampleParams& params, uint8_t fill, bool tensor,
                        uint8_t* out, std::vector<uint8_t>* scratch) {
  std::vector<int> xs, ys;
  if (absl::Status s = AxisMaps(size, p, params, tensor, &xs, &ys); !s.ok()) {
    return s;
  }
  if (params.flip) std::reverse(xs.begin(), xs.end());
  if (params.vflip) std::reverse(ys.begin(), ys.end());
  const ImageSize o = p.output;
  for (int y = 0; y < o.height; ++y) {
    uint8_t* row = out + size_t(y) * o.width;
    if (ys[y] < 0) {
      std::fill(row, row + o.width, fill);
      continue;
    }
    const uint8_t* in = mask + size_t(ys[y]) * size.width;
    for (int x = 0; x < o.width; ++x) row[x] = xs[x] < 0 ? fill : in[xs[x]];
  }
  ApplyMaskWarp(p.warp, params.warp, o, fill, out, scratch);
  return absl::OkStatus();
}

}  // namespace stoker
