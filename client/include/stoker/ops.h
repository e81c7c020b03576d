// The pipeline ops of a JobSpec: the torchvision transforms of the same
// names and defaults (docs/transforms.md lists what each does).
#ifndef STOKER_OPS_H_
#define STOKER_OPS_H_

#include <array>
#include <cstdint>
#include <variant>
#include <vector>

#include "stoker/vocabulary.h"

namespace stoker {

// A fill colour: {} is black, one value for all channels, or R, G, B.
using Fill = std::vector<uint32_t>;

struct RandomResizedCrop {
  uint32_t height = 224;
  uint32_t width = 224;
  float scale_min = 0.08f;
  float scale_max = 1.0f;
  float ratio_min = 3.0f / 4.0f;
  float ratio_max = 4.0f / 3.0f;
  Interpolation interpolation = Interpolation::kBilinear;
  bool operator==(const RandomResizedCrop&) const = default;
};
struct Resize {
  uint32_t shorter_side = 0;  // or exactly height x width
  uint32_t height = 0;
  uint32_t width = 0;
  Interpolation interpolation = Interpolation::kBilinear;
  // RandomResize (the segmentation reference's): the shorter side drawn per
  // sample from [shorter_side, shorter_side_max]; before a RandomCrop.
  uint32_t shorter_side_max = 0;
  bool operator==(const Resize&) const = default;
};
struct CenterCrop {
  uint32_t height = 224;
  uint32_t width = 224;
  bool operator==(const CenterCrop&) const = default;
};
enum class PaddingMode { kConstant, kEdge, kReflect, kSymmetric };
struct Pad {  // before a RandomCrop
  uint32_t left = 0, top = 0, right = 0, bottom = 0;
  Fill fill;
  PaddingMode padding_mode = PaddingMode::kConstant;
  bool operator==(const Pad&) const = default;
};
struct RandomCrop {
  uint32_t height = 32;
  uint32_t width = 32;
  uint32_t pad_left = 0, pad_top = 0, pad_right = 0, pad_bottom = 0;
  bool pad_if_needed = false;
  Fill fill;
  PaddingMode padding_mode = PaddingMode::kConstant;
  // pad_if_needed pads the right and bottom only (the segmentation
  // reference's pad_if_smaller).
  bool pad_end = false;
  // The flip is drawn before this crop (the reference's order).
  bool after_flip = false;
  bool operator==(const RandomCrop&) const = default;
};
struct RandomHorizontalFlip {
  float p = 0.5f;
  bool operator==(const RandomHorizontalFlip&) const = default;
};
struct RandomVerticalFlip {
  float p = 0.5f;
  bool operator==(const RandomVerticalFlip&) const = default;
};
struct RandomRotation {
  float degrees_min = -15.0f;
  float degrees_max = 15.0f;
  Interpolation interpolation = Interpolation::kNearest;
  Fill fill;
  float p = 1.0f;  // RandomApply([RandomRotation(...)], p)
  bool operator==(const RandomRotation&) const = default;
};
struct RandomAffine {
  float degrees_min = 0.0f;
  float degrees_max = 0.0f;
  float translate_x = 0.0f;  // fractions of the width and height
  float translate_y = 0.0f;
  float scale_min = 1.0f;
  float scale_max = 1.0f;
  float shear_x_min = 0.0f, shear_x_max = 0.0f;  // degrees
  float shear_y_min = 0.0f, shear_y_max = 0.0f;
  Interpolation interpolation = Interpolation::kNearest;
  Fill fill;
  float p = 1.0f;
  bool operator==(const RandomAffine&) const = default;
};
struct ColorJitter {  // 0 leaves a property alone
  float brightness = 0.4f;
  float contrast = 0.4f;
  float saturation = 0.4f;
  float hue = 0.0f;  // in [0, 0.5]: the factor is drawn from [-hue, hue]
  float p = 1.0f;    // RandomApply([ColorJitter(...)], p)
  bool operator==(const ColorJitter&) const = default;
};
struct RandomGrayscale {  // p = 1: Grayscale(num_output_channels=3)
  float p = 0.1f;
  bool operator==(const RandomGrayscale&) const = default;
};
struct GaussianBlur {
  uint32_t kernel_x = 23;  // odd
  uint32_t kernel_y = 23;
  float sigma_min = 0.1f;
  float sigma_max = 2.0f;
  float p = 1.0f;
  bool operator==(const GaussianBlur&) const = default;
};
// Pillow's img.filter(ImageFilter.GaussianBlur(radius)), radius drawn from
// [radius_min, radius_max] (DINO's and MoCo v3's own blur); in place of a
// GaussianBlur.
struct PillowGaussianBlur {
  float radius_min = 0.1f;
  float radius_max = 2.0f;
  float p = 1.0f;
  bool operator==(const PillowGaussianBlur&) const = default;
};
// torchvision's RandomSolarize on a PIL image (ImageOps.solarize).
struct RandomSolarize {
  float threshold = 128.0f;
  float p = 0.5f;
  bool operator==(const RandomSolarize&) const = default;
};
struct TrivialAugmentWide {
  uint32_t num_magnitude_bins = 31;
  Interpolation interpolation = Interpolation::kNearest;
  Fill fill;
  bool operator==(const TrivialAugmentWide&) const = default;
};
struct RandAugment {
  uint32_t num_ops = 2;
  uint32_t magnitude = 9;
  uint32_t num_magnitude_bins = 31;
  Interpolation interpolation = Interpolation::kNearest;
  Fill fill;
  bool operator==(const RandAugment&) const = default;
};
enum class AutoAugmentPolicy { kImageNet, kCifar10, kSvhn };
struct AutoAugment {
  AutoAugmentPolicy policy = AutoAugmentPolicy::kImageNet;
  Interpolation interpolation = Interpolation::kNearest;
  Fill fill;
  bool operator==(const AutoAugment&) const = default;
};
struct AugMix {
  uint32_t severity = 3;
  uint32_t mixture_width = 3;
  int32_t chain_depth = -1;  // <= 0: 1 to 3, drawn per chain
  float alpha = 1.0f;
  bool all_ops = true;
  Interpolation interpolation = Interpolation::kBilinear;
  Fill fill;  // {}: fill=None (zeros outside the warps)
  bool operator==(const AugMix&) const = default;
};
struct Normalize {  // ImageNet statistics by default
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};
  bool operator==(const Normalize&) const = default;
};
struct RandomErasing {  // on the float output, after Normalize
  float p = 0.5f;
  float scale_min = 0.02f, scale_max = 0.33f;
  float ratio_min = 0.3f, ratio_max = 3.3f;
  std::vector<float> value;   // {} is 0; one value, or one per channel
  bool random_value = false;  // value="random": standard normal noise
  bool operator==(const RandomErasing&) const = default;
};

struct RandomChoice;
using Op =
    std::variant<RandomResizedCrop, Resize, CenterCrop, RandomHorizontalFlip,
                 ColorJitter, Normalize, Pad, RandomCrop, RandomVerticalFlip,
                 RandomRotation, RandomAffine, RandomGrayscale, GaussianBlur,
                 TrivialAugmentWide, RandAugment, AutoAugment, AugMix,
                 RandomErasing, RandomChoice, PillowGaussianBlur,
                 RandomSolarize>;
// One of 2 to 16 image ops of one kind (the flips, RandomRotation and
// RandomAffine, ColorJitter, RandomGrayscale, GaussianBlur and
// PillowGaussianBlur, RandomSolarize, or the automatic augmentations) per
// sample, with relative weights ({}: equal).
struct RandomChoice {
  std::vector<Op> options;
  std::vector<float> p;
  bool operator==(const RandomChoice&) const = default;
};

}  // namespace stoker

#endif  // STOKER_OPS_H_
