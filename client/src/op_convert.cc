#include "client/src/op_convert.h"

#include "common/vocabulary_wire.h"

namespace stoker::internal {
namespace {

template <typename Message>
void WriteFill(const Fill& fill, Message* m) {
  for (uint32_t v : fill) m->add_fill(v);
}

// Interpolation and fill of the automatic augmentations and warps.
template <typename Op, typename Message>
void WriteStyle(const Op& o, Message* m) {
  m->set_interpolation(ToWire(o.interpolation));
  WriteFill(o.fill, m);
}

struct OpWriter {
  v1::Op* op;
  void operator()(const RandomResizedCrop& o) const {
    auto* p = op->mutable_random_resized_crop();
    p->set_height(o.height);
    p->set_width(o.width);
    p->set_scale_min(o.scale_min);
    p->set_scale_max(o.scale_max);
    p->set_ratio_min(o.ratio_min);
    p->set_ratio_max(o.ratio_max);
    p->set_interpolation(ToWire(o.interpolation));
  }
  void operator()(const Resize& o) const {
    auto* p = op->mutable_resize();
    p->set_shorter_side(o.shorter_side);
    p->set_height(o.height);
    p->set_width(o.width);
    p->set_interpolation(ToWire(o.interpolation));
    p->set_shorter_side_max(o.shorter_side_max);
  }
  void operator()(const CenterCrop& o) const {
    op->mutable_center_crop()->set_height(o.height);
    op->mutable_center_crop()->set_width(o.width);
  }
  void operator()(const Pad& o) const {
    auto* p = op->mutable_pad();
    p->set_left(o.left);
    p->set_top(o.top);
    p->set_right(o.right);
    p->set_bottom(o.bottom);
    WriteFill(o.fill, p);
    p->set_padding_mode(kModes[int(o.padding_mode)]);
  }
  void operator()(const RandomCrop& o) const {
    auto* p = op->mutable_random_crop();
    p->set_height(o.height);
    p->set_width(o.width);
    p->set_pad_left(o.pad_left);
    p->set_pad_top(o.pad_top);
    p->set_pad_right(o.pad_right);
    p->set_pad_bottom(o.pad_bottom);
    p->set_pad_if_needed(o.pad_if_needed);
    WriteFill(o.fill, p);
    p->set_padding_mode(kModes[int(o.padding_mode)]);
    p->set_pad_end(o.pad_end);
    p->set_after_flip(o.after_flip);
  }
  void operator()(const RandomHorizontalFlip& o) const {
    op->mutable_random_horizontal_flip()->set_p(o.p);
  }
  void operator()(const RandomVerticalFlip& o) const {
    op->mutable_random_vertical_flip()->set_p(o.p);
  }
  void operator()(const RandomRotation& o) const {
    auto* p = op->mutable_random_rotation();
    p->set_degrees_min(o.degrees_min);
    p->set_degrees_max(o.degrees_max);
    WriteStyle(o, p);
    p->set_p(o.p);
  }
  void operator()(const RandomAffine& o) const {
    auto* p = op->mutable_random_affine();
    p->set_degrees_min(o.degrees_min);
    p->set_degrees_max(o.degrees_max);
    if (o.translate_x != 0 || o.translate_y != 0) {
      p->set_translate_x(o.translate_x);
      p->set_translate_y(o.translate_y);
    }
    if (o.scale_min != 1 || o.scale_max != 1) {
      p->set_scale_min(o.scale_min);
      p->set_scale_max(o.scale_max);
    }
    if (o.shear_x_min != 0 || o.shear_x_max != 0) {
      p->set_shear_x_min(o.shear_x_min);
      p->set_shear_x_max(o.shear_x_max);
    }
    if (o.shear_y_min != 0 || o.shear_y_max != 0) {
      p->set_shear_y_min(o.shear_y_min);
      p->set_shear_y_max(o.shear_y_max);
    }
    WriteStyle(o, p);
    p->set_p(o.p);
  }
  void operator()(const ColorJitter& o) const {
    auto* p = op->mutable_color_jitter();
    p->set_brightness(o.brightness);
    p->set_contrast(o.contrast);
    p->set_saturation(o.saturation);
    p->set_hue(o.hue);
    p->set_p(o.p);
  }
  void operator()(const RandomGrayscale& o) const {
    op->mutable_random_grayscale()->set_p(o.p);
  }
  void operator()(const GaussianBlur& o) const {
    auto* p = op->mutable_gaussian_blur();
    p->set_kernel_x(o.kernel_x);
    p->set_kernel_y(o.kernel_y);
    p->set_sigma_min(o.sigma_min);
    p->set_sigma_max(o.sigma_max);
    p->set_p(o.p);
  }
  void operator()(const PillowGaussianBlur& o) const {
    auto* p = op->mutable_pillow_gaussian_blur();
    p->set_radius_min(o.radius_min);
    p->set_radius_max(o.radius_max);
    p->set_p(o.p);
  }
  void operator()(const RandomSolarize& o) const {
    auto* p = op->mutable_random_solarize();
    p->set_threshold(o.threshold);
    p->set_p(o.p);
  }
  void operator()(const TrivialAugmentWide& o) const {
    auto* p = op->mutable_trivial_augment_wide();
    p->set_num_magnitude_bins(o.num_magnitude_bins);
    WriteStyle(o, p);
  }
  void operator()(const RandAugment& o) const {
    auto* p = op->mutable_rand_augment();
    p->set_num_ops(o.num_ops);
    p->set_magnitude(o.magnitude);
    p->set_num_magnitude_bins(o.num_magnitude_bins);
    WriteStyle(o, p);
  }
  void operator()(const AutoAugment& o) const {
    auto* p = op->mutable_auto_augment();
    p->set_policy(kPolicies[int(o.policy)]);
    WriteStyle(o, p);
  }
  void operator()(const AugMix& o) const {
    auto* p = op->mutable_aug_mix();
    p->set_severity(o.severity);
    p->set_mixture_width(o.mixture_width);
    p->set_chain_depth(o.chain_depth);
    p->set_alpha(o.alpha);
    p->set_all_ops(o.all_ops);
    WriteStyle(o, p);
  }
  void operator()(const RandomChoice& o) const {
    auto* p = op->mutable_random_choice();
    for (const Op& option : o.options) OpToProto(option, p->add_options());
    for (float w : o.p) p->add_p(w);
  }
  void operator()(const Normalize& o) const {
    auto* p = op->mutable_normalize();
    for (int c = 0; c < 3; ++c) {
      p->add_mean(o.mean[c]);
      p->add_std(o.std[c]);
    }
  }
  void operator()(const RandomErasing& o) const {
    auto* p = op->mutable_random_erasing();
    p->set_p(o.p);
    p->set_scale_min(o.scale_min);
    p->set_scale_max(o.scale_max);
    p->set_ratio_min(o.ratio_min);
    p->set_ratio_max(o.ratio_max);
    for (float v : o.value) p->add_value(v);
    p->set_random_value(o.random_value);
  }
};

}  // namespace

void OpToProto(const Op& op, v1::Op* out) { std::visit(OpWriter{out}, op); }

}  // namespace stoker::internal
