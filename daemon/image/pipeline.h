// Pipeline: what a job does to each decoded image, validated, plus the
// per-sample random parameters (crop box, flip) drawn from a counter-based
// generator keyed by (seed, epoch, sample index): the same sample in the
// same epoch gets the same parameters whatever the worker count, the
// scheduling or daemon restarts.
#ifndef STOKER_DAEMON_IMAGE_PIPELINE_H_
#define STOKER_DAEMON_IMAGE_PIPELINE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "daemon/image/aug_mix.h"
#include "daemon/image/auto_augment.h"
#include "daemon/image/color_jitter.h"
#include "daemon/image/counter_random.h"
#include "daemon/image/decode_types.h"
#include "daemon/image/gaussian_blur.h"
#include "daemon/image/pillow_resample.h"
#include "daemon/image/random_crop.h"
#include "daemon/image/random_erasing.h"
#include "daemon/image/random_warp.h"
#include "stoker/vocabulary.h"  // Interpolation, DType, Layout

namespace stoker {

// The per-sample image ops after the geometry, in the order they run.
enum class ImageStage {
  kFlip,
  kVerticalFlip,
  kWarp,
  kJitter,
  kGrayscale,
  kBlur,
  kSolarize,
  kAugment,
};
inline constexpr int kImageStages = 8;

// RandomSolarize(threshold, p) on a PIL image: values >= threshold become
// 255 - value.
struct SolarizeSpec {
  double p = 0;  // 0: off
  double threshold = 128;
};

struct ChoiceSpec;

struct Pipeline {
  enum class Geometry {
    kResize,             // resize to `output` (or `resized`, then center crop)
    kRandomResizedCrop,  // random box, resized to `output`
    kRandomCrop,         // [resize to `resized` or `shorter_side`], [pad],
                         // a random `output` of that (`crop`)
  };
  Geometry geometry = Geometry::kResize;
  ImageSize output;  // what every image becomes
  Interpolation interpolation = Interpolation::kBilinear;
  // Resample as Pillow does (torchvision's bytes), or faster and
  // approximately (area average when shrinking; DCT-scaled JPEG decode).
  bool fast_resample = false;  // JobSpec.fast_resample
  // kRandomResizedCrop.
  double scale_min = 0.08;
  double scale_max = 1.0;
  double ratio_min = 3.0 / 4.0;
  double ratio_max = 4.0 / 3.0;
  // kResize: shorter side to `shorter_side` (if > 0) or exactly to `resized`,
  // then, if `center_crop`, the centre `output` of that.
  int shorter_side = 0;
  // RandomResize (kRandomCrop only): the shorter side drawn per sample from
  // [shorter_side, shorter_side_max]; 0: shorter_side itself.
  int shorter_side_max = 0;
  ImageSize resized;
  bool center_crop = false;
  RandomCropSpec crop;  // kRandomCrop
  double flip_p = 0.0;
  double vflip_p = 0.0;   // RandomVerticalFlip
  WarpSpec warp;          // RandomRotation or RandomAffine, after the flips
  double gray_p = 0.0;    // RandomGrayscale (1: Grayscale), after the jitter
  double jitter_p = 1.0;  // RandomApply([ColorJitter]): how often it applies
  // ColorJitter strengths (0: off).
  float brightness = 0;
  float contrast = 0;
  float saturation = 0;
  float hue = 0;  // in [0, 0.5]
  bool jitter() const {
    return brightness > 0 || contrast > 0 || saturation > 0 || hue > 0;
  }
  BlurSpec blur;          // GaussianBlur (or Pillow's), after the grayscale
  SolarizeSpec solarize;  // after the blur
  // TrivialAugmentWide, RandAugment or AutoAugment, after the blur.
  AutoAugmentSpec augment;
  bool normalize = false;
  // RandomErasing on the output tensor, after the normalisation.
  ErasingSpec erasing;
  // RandomChoice of image ops: it stands in its options' stage.
  std::shared_ptr<const ChoiceSpec> choice;
  std::array<float, 3> mean = {0, 0, 0};
  std::array<float, 3> std = {1, 1, 1};
  DType dtype = DType::kUInt8;
  Layout layout = Layout::kNHWC;
  // Float output: x * float32(1/255) (transforms.v2's ToDtype) instead of
  // x / 255 (v1's ToTensor and ConvertImageDtype).
  bool scale_reciprocal = false;
  // The reference libraries' behaviour (JobSpec.reference): the palette
  // entries past a short BMP palette black (Pillow >= 10.1) rather than a
  // grey ramp; reflect pads wider than the image in whole periods (numpy
  // >= 2.1); which resizes run their vertical pass first (Pillow >= 12.2).
  bool palette_tail_black = true;
  PassOrder resample_order = PassOrder::kShrinkVerticalFirst;

  int BytesPerValue() const {
    return dtype == DType::kUInt8 ? 1 : dtype == DType::kFloat16 ? 2 : 4;
  }
  uint64_t BytesPerImage() const {
    return output.Pixels() * 3 * BytesPerValue();
  }
};

// torchvision's RandomChoice(options, p) of ops of one stage: each option
// a pipeline holding only its op (and the output size).
struct ChoiceSpec {
  ImageStage stage = ImageStage::kFlip;
  std::vector<Pipeline> options;
  std::vector<double> weights;  // relative, as random.choices takes them
};
inline constexpr int kMaxChoices = 16;

// What one sample gets.
struct SampleParams {
  Region box;            // the part of the source image that becomes the output
  CropParams crop;       // kRandomCrop: where the crop sits, what it reads
  int shorter_side = 0;  // RandomResize's draw (0: none)
  CropMaps crop_maps;
  bool flip = false;
  bool vflip = false;
  bool gray = false;
  bool solarize = false;
  bool jitter_applies = true;
  WarpParams warp;
  JitterParams jitter;
  BlurParams blur;
  DrawnOps augment;
  DrawnAugMix augmix;  // augment.kind == kAugMix
  ErasingParams erasing;
  int choice = -1;                   // the RandomChoice option drawn
  std::vector<SampleParams> chosen;  // its parameters (one)
};

// torchvision's RandomResizedCrop.get_params: up to 10 draws of a target
// area (uniform in [scale_min, scale_max] x area) and an aspect ratio
// (log-uniform in [ratio_min, ratio_max]); the first box that fits is placed
// uniformly; else the centre crop with the ratio clamped into range.
// Randoms come from the stream keyed by `key`.
Region RandomResizedCropBox(ImageSize image, const Pipeline& pipeline,
                            uint64_t key);

// The size torchvision's Resize (shorter side, or exact) gives an image.
ImageSize TorchvisionResizedSize(ImageSize image, const Pipeline& pipeline);
// The size F.resize(img, side) gives an image: its shorter side `side`.
ImageSize ShorterSideSize(ImageSize image, int side);

// Whether a kRandomCrop pipeline resizes before its pads and crop.
inline bool ResizesBeforeCrop(const Pipeline& p) {
  return p.shorter_side > 0 || p.resized.width > 0;
}

// torchvision's CenterCrop of `output` from an image of `resized` pixels.
Region CenterCropWindow(ImageSize resized, ImageSize output);

// torchvision's Resize (shorter side, or exact) + CenterCrop mapped back to
// the source image: the box that becomes the output.
Region ResizeCenterCropBox(ImageSize image, const Pipeline& pipeline);

// ColorJitter's order and factors, from the stream keyed by `key`.
JitterParams DrawJitter(const Pipeline& pipeline, uint64_t key);

// The key of sample `index` in `epoch` of a job seeded `seed`.
uint64_t SampleKey(uint64_t seed, uint64_t epoch, uint64_t index);

// The key of copy `copy` of a sample whose key is `key` (repeated
// augmentation); copy 0 keeps the sample's key.
inline uint64_t CopyKey(uint64_t key, uint32_t copy) {
  return copy == 0 ? key : Mix64(key ^ (copy * 0x9e3779b97f4a7c15ull));
}

// The most views a job may ask for (JobSpec.views; DINO takes 10).
inline constexpr int kMaxViews = 32;

// The key of view `view` of a sample whose key is `key` (JobSpec.views);
// view 0 keeps the sample's key.
inline uint64_t ViewKey(uint64_t key, uint32_t view) {
  return view == 0 ? key : Mix64(key + view * 0xc2b2ae3d27d4eb4full);
}

SampleParams DrawSampleParams(const Pipeline& pipeline, ImageSize image,
                              uint64_t key);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PIPELINE_H_
