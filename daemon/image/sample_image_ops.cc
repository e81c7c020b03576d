// SampleDecoder's image ops on the resampled planes, stage by stage (see
// sample_decoder.h).
#include <algorithm>
#include <cstring>

#include "daemon/image/pillow_blur.h"
#include "daemon/image/sample_decoder.h"
#include "libyuv/planar_functions.h"

namespace stoker {

namespace {

// ImageOps.solarize's table on `count` values.
void Solarize(const SolarizeSpec& spec, size_t count, uint8_t* values) {
  for (size_t i = 0; i < count; ++i) {
    if (values[i] >= spec.threshold) values[i] = uint8_t(255 - values[i]);
  }
}

// Turns `count` planes of `size` upside down.
void FlipVertically(ImageSize size, int count, uint8_t* planes) {
  for (int c = 0; c < count; ++c) {
    uint8_t* plane = planes + c * size.Pixels();
    for (int top = 0, bottom = size.height - 1; top < bottom; ++top, --bottom) {
      std::swap_ranges(plane + size_t(top) * size.width,
                       plane + size_t(top + 1) * size.width,
                       plane + size_t(bottom) * size.width);
    }
  }
}

}  // namespace

void SampleDecoder::ApplyImageOps(const Pipeline& pipeline,
                                  const SampleParams& params, uint8_t* planes) {
  for (int s = 0; s < kImageStages; ++s) {
    const ImageStage stage = static_cast<ImageStage>(s);
    if (pipeline.choice && pipeline.choice->stage == stage) {
      if (params.choice >= 0) {
        ApplyImageOps(pipeline.choice->options[params.choice], params.chosen[0],
                      planes);
      }
      continue;
    }
    ApplyStage(pipeline, params, stage, planes);
  }
}

void SampleDecoder::ApplyStage(const Pipeline& pipeline,
                               const SampleParams& params, ImageStage stage,
                               uint8_t* planes) {
  const ImageSize o = pipeline.output;
  const size_t n = o.Pixels();
  switch (stage) {
    case ImageStage::kFlip:
      if (!params.flip) return;
      for (int c = 0; c < 3; ++c) {
        uint8_t* plane = planes + c * n;
        uint8_t* spare = planes + 3 * n;
        libyuv::MirrorPlane(plane, o.width, spare, o.width, o.width, o.height);
        std::memcpy(plane, spare, n);
      }
      return;
    case ImageStage::kVerticalFlip:
      if (params.vflip) FlipVertically(o, 3, planes);
      return;
    case ImageStage::kWarp:
      return ApplyWarp(pipeline.warp, params.warp, o, planes, &augment_);
    case ImageStage::kJitter:
      if (pipeline.jitter() && params.jitter_applies) {
        ApplyJitter(planes, n, params.jitter);
      }
      return;
    case ImageStage::kGrayscale:
      if (!params.gray) return;
      for (size_t i = 0; i < n; ++i) {  // Pillow's convert("L"), 3 channels
        planes[i] = planes[n + i] = planes[2 * n + i] =
            Luma(planes[i], planes[n + i], planes[2 * n + i]);
      }
      return;
    case ImageStage::kBlur:
      if (!pipeline.blur.pillow) {
        return ApplyBlur(pipeline.blur, params.blur, o, planes, &blur_);
      }
      if (params.blur.apply) {
        ApplyPillowBlur(params.blur.sigma, o, planes, &augment_);
      }
      return;
    case ImageStage::kSolarize:
      if (params.solarize) Solarize(pipeline.solarize, 3 * n, planes);
      return;
    case ImageStage::kAugment:
      if (pipeline.augment.kind == AutoAugmentSpec::Kind::kAugMix) {
        ApplyAugMix(pipeline.augment, params.augmix, o, planes, &augmix_);
      } else if (pipeline.augment.enabled()) {
        ApplyDrawnOps(params.augment, pipeline.augment.style, o, planes,
                      &augment_);
      }
      return;
  }
}

}  // namespace stoker
