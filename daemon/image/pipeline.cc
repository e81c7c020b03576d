#include "daemon/image/pipeline.h"

#include <algorithm>
#include <cmath>

#include "daemon/image/counter_random.h"

namespace stoker {
namespace {

// Python's round(): half to even.
int RoundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }

// The image a kRandomCrop pads and crops: resized or not, by RandomResize's
// shorter side (drawn into *drawn) or a fixed one.
ImageSize CropStage(const Pipeline& p, ImageSize image, uint64_t key,
                    int* drawn) {
  if (p.shorter_side_max > p.shorter_side) {  // random.randint(min, max)
    uint64_t k = 0;
    *drawn =
        p.shorter_side +
        int(UniformBelow(Mix64(key ^ 0x5123), &k,
                         uint64_t(p.shorter_side_max - p.shorter_side + 1)));
    return ShorterSideSize(image, *drawn);
  }
  return ResizesBeforeCrop(p) ? TorchvisionResizedSize(image, p) : image;
}

}  // namespace

Region RandomResizedCropBox(ImageSize image, const Pipeline& p, uint64_t key) {
  const double area = double(image.width) * image.height;
  const double log_min = std::log(p.ratio_min), log_max = std::log(p.ratio_max);
  uint64_t k = 0;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area =
        area * Uniform(key, &k, p.scale_min, p.scale_max);
    const double aspect = std::exp(Uniform(key, &k, log_min, log_max));
    const int w = RoundHalfEven(std::sqrt(target_area * aspect));
    const int h = RoundHalfEven(std::sqrt(target_area / aspect));
    if (0 < w && w <= image.width && 0 < h && h <= image.height) {
      const int y = int(UniformBelow(key, &k, uint64_t(image.height - h + 1)));
      const int x = int(UniformBelow(key, &k, uint64_t(image.width - w + 1)));
      return {x, y, w, h};
    }
  }
  // Fallback: the central crop, its ratio clamped into range.
  const double in_ratio = double(image.width) / image.height;
  int w = image.width, h = image.height;
  if (in_ratio < p.ratio_min) {
    h = RoundHalfEven(w / p.ratio_min);
  } else if (in_ratio > p.ratio_max) {
    w = RoundHalfEven(h * p.ratio_max);
  }
  return {(image.width - w) / 2, (image.height - h) / 2, w, h};
}

ImageSize TorchvisionResizedSize(ImageSize image, const Pipeline& p) {
  if (p.shorter_side <= 0) return p.resized;
  return ShorterSideSize(image, p.shorter_side);
}

ImageSize ShorterSideSize(ImageSize image, int side) {
  // Resize(int): the shorter side becomes `side`, the longer one
  // int(side * long / short).
  // Saturated: an extreme aspect ratio must not wrap the longer side.
  auto longer = [&](int64_t long_side, int64_t short_side) {
    return int(
        std::min<int64_t>(side * long_side / short_side, int64_t{1} << 30));
  };
  if (image.width <= image.height) {
    return {side, longer(image.height, image.width)};
  }
  return {longer(image.width, image.height), side};
}

Region CenterCropWindow(ImageSize resized, ImageSize output) {
  // top = int(round((h - ch) / 2.0)), Python rounding.
  return {RoundHalfEven((resized.width - output.width) / 2.0),
          RoundHalfEven((resized.height - output.height) / 2.0), output.width,
          output.height};
}

Region ResizeCenterCropBox(ImageSize image, const Pipeline& p) {
  if (!p.center_crop) return {0, 0, image.width, image.height};
  const ImageSize resized = TorchvisionResizedSize(image, p);
  const Region crop = CenterCropWindow(resized, p.output);
  const int top = crop.y;
  const int left = crop.x;
  const double sx = double(image.width) / resized.width;
  const double sy = double(image.height) / resized.height;
  Region box;
  box.x = int(std::lround(left * sx));
  box.y = int(std::lround(top * sy));
  box.width =
      std::clamp(int(std::lround(p.output.width * sx)), 1, image.width - box.x);
  box.height = std::clamp(int(std::lround(p.output.height * sy)), 1,
                          image.height - box.y);
  return box;
}

JitterParams DrawJitter(const Pipeline& p, uint64_t key) {
  // As torchvision's ColorJitter.get_params: an order of the four, then
  // each factor uniform in [max(0, 1 - x), 1 + x], and the hue factor in
  // [-hue, hue].
  JitterParams j;
  uint64_t k = 0;
  for (int i = 3; i > 0; --i) {
    std::swap(j.order[i], j.order[UniformBelow(key, &k, i + 1)]);
  }
  auto factor = [&](float x) {
    return x > 0 ? float(Uniform(key, &k, std::max(0.0, 1.0 - x), 1.0 + x))
                 : 1.0f;
  };
  j.brightness = factor(p.brightness);
  j.contrast = factor(p.contrast);
  j.saturation = factor(p.saturation);
  if (p.hue > 0) {
    j.hue = true;
    j.hue_shift = HueShift(Uniform(key, &k, -double(p.hue), double(p.hue)));
  }
  return j;
}

uint64_t SampleKey(uint64_t seed, uint64_t epoch, uint64_t index) {
  return Mix64(Mix64(Mix64(seed ^ 0x5ca1ab1e) + epoch) + index);
}

SampleParams DrawSampleParams(const Pipeline& p, ImageSize image,
                              uint64_t key) {
  SampleParams params;
  // The flip has its own stream, so it does not depend on how many draws
  // the crop took (and a crop after it can read it).
  params.flip = Chance(Mix64(key ^ 0xf11b), p.flip_p);
  if (p.geometry == Pipeline::Geometry::kRandomCrop) {
    const ImageSize stage = CropStage(p, image, key, &params.shorter_side);
    params.crop = DrawRandomCrop(p.crop, stage, p.output, key, params.flip,
                                 &params.crop_maps);
    params.box = {0, 0, image.width, image.height};
  } else {
    params.box = p.geometry == Pipeline::Geometry::kRandomResizedCrop
                     ? RandomResizedCropBox(image, p, key)
                     : ResizeCenterCropBox(image, p);
  }
  if (p.jitter()) params.jitter = DrawJitter(p, Mix64(key ^ 0xc0105));
  params.vflip = Chance(Mix64(key ^ 0xf11c), p.vflip_p);
  params.warp = DrawWarp(p.warp, p.output, Mix64(key ^ 0x3a4f));
  params.gray = Chance(Mix64(key ^ 0x62a7), p.gray_p);
  params.jitter_applies =
      p.jitter_p >= 1 || Chance(Mix64(key ^ 0xa9917), p.jitter_p);
  params.blur = DrawBlur(p.blur, Mix64(key ^ 0xb1c2));
  params.solarize = Chance(Mix64(key ^ 0x501a), p.solarize.p);
  // Each draw has its own stream, keyed by the sample, so adding one op to
  // a pipeline leaves the others' draws alone.
  if (p.augment.kind == AutoAugmentSpec::Kind::kAugMix) {
    params.augmix = DrawAugMix(p.augment, p.output, Mix64(key ^ 0xa0a0));
  } else if (p.augment.enabled()) {
    params.augment = DrawAutoAugment(p.augment, p.output, Mix64(key ^ 0xa0a0));
  }
  params.erasing = DrawErasing(p.erasing, p.output, Mix64(key ^ 0xe2a5e));
  if (p.choice) {  // random.choices: a uniform point on the weights' sum
    const std::vector<double>& w = p.choice->weights;
    double total = 0;
    for (double v : w) total += v;
    uint64_t k = 0;
    double at = Uniform(Mix64(key ^ 0xc401ce), &k, 0.0, total);
    params.choice = int(w.size()) - 1;
    for (size_t i = 0; i < w.size(); ++i) {
      if (at < w[i]) {
        params.choice = int(i);
        break;
      }
      at -= w[i];
    }
    while (w[params.choice] <= 0) --params.choice;  // rounding's overshoot
    params.chosen.push_back(DrawSampleParams(p.choice->options[params.choice],
                                             image, Mix64(key ^ 0xc401cf)));
  }
  return params;
}

}  // namespace stoker
