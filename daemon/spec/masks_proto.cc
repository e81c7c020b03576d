#include "daemon/spec/masks_proto.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

absl::Status Refused(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("a mask field cannot follow ", what));
}

// Whether the pipeline's geometry is one a mask follows exactly.
absl::Status CheckPipeline(const Pipeline& p) {
  if (p.fast_resample) {
    return Refused(
        "fast_resample (it approximates the image's geometry; a mask needs "
        "torchvision's exactly)");
  }
  if (p.augment.kind == AutoAugmentSpec::Kind::kAugMix) {
    return Refused("AugMix (it blends warped copies of the image)");
  }
  if (p.augment.enabled()) {
    return Refused(
        "an automatic augmentation (TrivialAugmentWide, RandAugment, "
        "AutoAugment: their shears, translations and rotations are drawn per "
        "op); leave it out of a segmentation pipeline");
  }
  if (p.choice && (p.choice->stage == ImageStage::kFlip ||
                   p.choice->stage == ImageStage::kVerticalFlip ||
                   p.choice->stage == ImageStage::kWarp)) {
    return Refused("a RandomChoice of geometric ops");
  }
  if (p.choice) {  // an option runs its own ops: each checked as a pipeline
    for (const Pipeline& option : p.choice->options) {
      if (absl::Status s = CheckPipeline(option); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseMasks(const v1::JobSpec& spec, JobConfig* config) {
  const auto masks = std::count_if(
      config->fields.begin(), config->fields.end(),
      [](const FieldConfig& f) { return f.role == FieldRole::kMask; });
  if (masks == 0) {
    if (spec.has_mask_fill() || spec.mask_tensor_nearest()) {
      return absl::InvalidArgumentError(
          "mask_fill and mask_tensor_nearest apply to a job with a mask field "
          "(FIELD_KIND_MASK)");
    }
    return absl::OkStatus();
  }
  config->mask_tensor_nearest = spec.mask_tensor_nearest();
  if (config->mask_tensor_nearest && config->pipeline.warp.enabled()) {
    return Refused(
        "transforms.v2's rotation or affine warp (it warps a mask tensor "
        "with grid_sample, not as Pillow does); use torchvision.transforms' "
        "RandomRotation or RandomAffine, which warp a PIL mask");
  }
  if (masks > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fields: a sample has at most one mask field, this job names ", masks));
  }
  if (spec.has_mask_fill()) {
    if (spec.mask_fill() > 255) {
      return absl::InvalidArgumentError(
          absl::StrCat("mask_fill must be in [0, 255] (a mask index), got ",
                       spec.mask_fill()));
    }
    config->mask_fill = uint8_t(spec.mask_fill());
  }
  if (!config->views.empty()) {
    return Refused(
        "several views (which view would it follow?); a job has views or a "
        "mask");
  }
  return CheckPipeline(config->pipeline);
}

void MasksToProto(const JobConfig& config, v1::JobSpec* spec) {
  for (const FieldConfig& field : config.fields) {
    if (field.role == FieldRole::kMask) {
      spec->set_mask_fill(config.mask_fill);
      spec->set_mask_tensor_nearest(config.mask_tensor_nearest);
    }
  }
}

}  // namespace stoker
