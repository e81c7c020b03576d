// libFuzzer target for the decode + augment path of a worker: whatever the
// bytes of a file and whatever valid pipeline, SampleDecoder must return a
// status and never crash, hang, leak or read or write out of bounds.
//
// Input: 8 bytes that choose the pipeline and the sample key, then the
// file's bytes (JPEG, PNG or anything).
#include <cstdint>
#include <cstring>
#include <vector>

#include "daemon/image/sample_decoder.h"

namespace {

stoker::Pipeline PipelineFrom(const uint8_t* h) {
  using stoker::Pipeline;
  Pipeline p;
  const uint8_t select = h[0];
  p.output = {1 + h[1] % 48, 1 + h[2] % 48};
  if (select & 1) {
    p.geometry = Pipeline::Geometry::kRandomResizedCrop;
  } else if (select & 2) {
    p.shorter_side = std::max(p.output.width, p.output.height) + h[3] % 16;
    p.center_crop = true;
  } else {
    p.resized = p.output;
  }
  p.flip_p = (select & 4) ? 0.5 : 0.0;
  if (select & 8) {
    p.brightness = p.contrast = p.saturation = 0.4f;
    p.hue = 0.2f;
  }
  if (select & 16) {
    p.dtype = (select & 32) ? stoker::DType::kFloat16 : stoker::DType::kFloat32;
    p.normalize = true;
    p.mean = {0.485f, 0.456f, 0.406f};
    p.std = {0.229f, 0.224f, 0.225f};
  }
  p.layout = (select & 64) ? stoker::Layout::kNCHW : stoker::Layout::kNHWC;
  p.interpolation = (select & 128) ? stoker::Interpolation::kNearest
                                   : stoker::Interpolation::kBilinear;
  // The high bits of h[3]: an automatic augmentation, its warps' filter,
  // and erasing (on float output) with noise.
  using Kind = stoker::AutoAugmentSpec::Kind;
  constexpr Kind kKinds[] = {Kind::kNone, Kind::kTrivialAugmentWide,
                             Kind::kRandAugment, Kind::kAutoAugment};
  p.augment.kind = kKinds[(h[3] >> 4) & 3];
  p.augment.num_ops = 3;
  p.augment.style.interpolation = (h[3] & 64) ? stoker::Interpolation::kBilinear
                                              : stoker::Interpolation::kNearest;
  p.augment.style.fill = {h[1], h[2], h[3]};
  if ((h[3] & 128) && p.dtype != stoker::DType::kUInt8) {
    p.erasing.enabled = true;
    p.erasing.p = 0.9;
    p.erasing.random_value = (h[1] & 1) != 0;
  }
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  // A 4-megapixel limit keeps each input's memory bounded, as the daemon's
  // --max_image_pixels does.
  static stoker::SampleDecoder decoder({.max_pixels = uint64_t{1} << 22});
  const stoker::Pipeline pipeline = PipelineFrom(data);
  uint64_t key = 0;
  std::memcpy(&key, data + 4, 4);
  std::vector<uint8_t> out(pipeline.BytesPerImage());
  (void)decoder.ProcessBytes({data + 8, size - 8}, pipeline, key, out.data());
  return 0;
}
