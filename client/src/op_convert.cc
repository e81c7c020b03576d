#include "client/src/op_convert.h"

#include "common/vocabulary_wire.h"

namespace stoker::internal {
namespace {

constexpr v1::PaddingMode kModes[] = {
    v1::PADDING_MODE_CONSTANT, v1::PADDING_MODE_EDGE, v1::PADDING_MODE_REFLECT,
    v1::PADDING_MODE_SYMMETRIC};
constexpr v1::AutoAugmentPolicy kPolicies[] = {v1::AUTO_AUGMENT_POLICY_IMAGENET,
                                               v1::AUTO_AUGMENT_POLICY_CIFAR10,
                                               v1::AUTO_AUGMENT_POLICY_SVHN};

PaddingMode ModeFrom(v1::PaddingMode mode) {
  for (int i = 0; i < 4; ++i) {
    if (kModes[i] == mode) return PaddingMode(i);
  }
  return PaddingMode::kConstant;
}

Interpolation InterpolationFrom(v1::Interpolation value, Interpolation unset) {
  return value == v1::INTERPOLATION_UNSPECIFIED
             ? unset
             : FromWire(value).value_or(unset);
}

template <typename Message>
void WriteFill(const Fill& fill, Message* m) {
  for (uint32_t v : fill) m->add_fill(v);
}

template <typename Message>
Fill ReadFill(const Message& m) {
  return Fill(m.fill().begin(), m.fill().end());
}

// Interpolation and fill of the automatic augmentations and warps.
template <typename Op, typename Message>
void WriteStyle(const Op& o, Message* m) {
  m->set_interpolation(ToWire(o.interpolation));
  WriteFill(o.fill, m);
}

template <typename Op, typename Message>
void ReadStyle(const Message& m, Op* o) {
  o->interpolation =
      m.has_interpolation()
          ? InterpolationFrom(m.interpolation(), Interpolation::kNearest)
          : Interpolation::kNearest;
  o->fill = ReadFill(m);
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

RandomAffine AffineFrom(const v1::RandomAffine& p) {
  RandomAffine a;
  a.degrees_min = p.degrees_min();
  a.degrees_max = p.degrees_max();
  a.translate_x = p.translate_x();
  a.translate_y = p.translate_y();
  a.scale_min = p.has_scale_min() ? p.scale_min() : 1.0f;
  a.scale_max = p.has_scale_max() ? p.scale_max() : 1.0f;
  a.shear_x_min = p.shear_x_min();
  a.shear_x_max = p.shear_x_max();
  a.shear_y_min = p.shear_y_min();
  a.shear_y_max = p.shear_y_max();
  ReadStyle(p, &a);
  a.p = p.has_p() ? p.p() : 1.0f;
  return a;
}

AugMix AugMixFrom(const v1::AugMix& p) {
  AugMix a;
  if (p.has_severity()) a.severity = p.severity();
  if (p.has_mixture_width()) a.mixture_width = p.mixture_width();
  if (p.has_chain_depth()) a.chain_depth = p.chain_depth();
  if (p.has_alpha()) a.alpha = p.alpha();
  if (p.has_all_ops()) a.all_ops = p.all_ops();
  a.interpolation =
      p.has_interpolation()
          ? InterpolationFrom(p.interpolation(), Interpolation::kBilinear)
          : Interpolation::kBilinear;
  a.fill = ReadFill(p);
  return a;
}

RandomErasing ErasingFrom(const v1::RandomErasing& p) {
  RandomErasing e;
  if (p.has_p()) e.p = p.p();
  if (p.has_scale_min()) e.scale_min = p.scale_min();
  if (p.has_scale_max()) e.scale_max = p.scale_max();
  if (p.has_ratio_min()) e.ratio_min = p.ratio_min();
  if (p.has_ratio_max()) e.ratio_max = p.ratio_max();
  e.value.assign(p.value().begin(), p.value().end());
  e.random_value = p.random_value();
  return e;
}

GaussianBlur BlurFrom(const v1::GaussianBlur& p) {
  return GaussianBlur{
      p.kernel_x(), p.kernel_y(), p.has_sigma_min() ? p.sigma_min() : 0.1f,
      p.has_sigma_max() ? p.sigma_max() : 2.0f, p.has_p() ? p.p() : 1.0f};
}

// The geometry and colour ops; the augmentations in AugmentFrom.
std::optional<Op> GeometryFrom(const v1::Op& op) {
  switch (op.kind_case()) {
    case v1::Op::kRandomResizedCrop: {
      const auto& p = op.random_resized_crop();
      return RandomResizedCrop{
          p.height(),
          p.width(),
          p.has_scale_min() ? p.scale_min() : 0.08f,
          p.has_scale_max() ? p.scale_max() : 1.0f,
          p.has_ratio_min() ? p.ratio_min() : 3.0f / 4.0f,
          p.has_ratio_max() ? p.ratio_max() : 4.0f / 3.0f,
          InterpolationFrom(p.interpolation(), Interpolation::kBilinear)};
    }
    case v1::Op::kResize: {
      const auto& p = op.resize();
      return Resize{
          p.shorter_side(), p.height(), p.width(),
          InterpolationFrom(p.interpolation(), Interpolation::kBilinear)};
    }
    case v1::Op::kCenterCrop:
      return CenterCrop{op.center_crop().height(), op.center_crop().width()};
    case v1::Op::kPad: {
      const auto& p = op.pad();
      return Pad{p.left(),   p.top(),     p.right(),
                 p.bottom(), ReadFill(p), ModeFrom(p.padding_mode())};
    }
    case v1::Op::kRandomCrop: {
      const auto& p = op.random_crop();
      return RandomCrop{
          p.height(),        p.width(),     p.pad_left(),
          p.pad_top(),       p.pad_right(), p.pad_bottom(),
          p.pad_if_needed(), ReadFill(p),   ModeFrom(p.padding_mode())};
    }
    case v1::Op::kRandomHorizontalFlip:
      return RandomHorizontalFlip{op.random_horizontal_flip().p()};
    case v1::Op::kRandomVerticalFlip:
      return RandomVerticalFlip{op.random_vertical_flip().p()};
    case v1::Op::kRandomRotation: {
      const auto& p = op.random_rotation();
      RandomRotation r{p.degrees_min(), p.degrees_max()};
      ReadStyle(p, &r);
      r.p = p.has_p() ? p.p() : 1.0f;
      return r;
    }
    case v1::Op::kRandomAffine:
      return AffineFrom(op.random_affine());
    case v1::Op::kColorJitter: {
      const auto& p = op.color_jitter();
      return ColorJitter{p.brightness(), p.contrast(), p.saturation(), p.hue(),
                         p.has_p() ? p.p() : 1.0f};
    }
    case v1::Op::kRandomGrayscale:
      return RandomGrayscale{
          op.random_grayscale().has_p() ? op.random_grayscale().p() : 0.1f};
    case v1::Op::kGaussianBlur:
      return BlurFrom(op.gaussian_blur());
    default:
      return std::nullopt;
  }
}

std::optional<Op> AugmentFrom(const v1::Op& op) {
  switch (op.kind_case()) {
    case v1::Op::kTrivialAugmentWide: {
      const auto& p = op.trivial_augment_wide();
      TrivialAugmentWide t;
      if (p.has_num_magnitude_bins()) {
        t.num_magnitude_bins = p.num_magnitude_bins();
      }
      ReadStyle(p, &t);
      return t;
    }
    case v1::Op::kRandAugment: {
      const auto& p = op.rand_augment();
      RandAugment r;
      if (p.has_num_ops()) r.num_ops = p.num_ops();
      if (p.has_magnitude()) r.magnitude = p.magnitude();
      if (p.has_num_magnitude_bins()) {
        r.num_magnitude_bins = p.num_magnitude_bins();
      }
      ReadStyle(p, &r);
      return r;
    }
    case v1::Op::kAutoAugment: {
      const auto& p = op.auto_augment();
      AutoAugment a;
      for (int i = 0; i < 3; ++i) {
        if (kPolicies[i] == p.policy()) a.policy = AutoAugmentPolicy(i);
      }
      ReadStyle(p, &a);
      return a;
    }
    case v1::Op::kAugMix:
      return AugMixFrom(op.aug_mix());
    case v1::Op::kRandomChoice: {
      RandomChoice c;
      for (const v1::Op& option : op.random_choice().options()) {
        std::optional<Op> known = OpFromProto(option);
        if (!known) return std::nullopt;  // a newer daemon's op: all or none
        c.options.push_back(*known);
      }
      c.p.assign(op.random_choice().p().begin(), op.random_choice().p().end());
      return c;
    }
    case v1::Op::kNormalize: {
      Normalize n;
      for (int c = 0; c < 3 && c < op.normalize().mean_size() &&
                      c < op.normalize().std_size();
           ++c) {
        n.mean[c] = op.normalize().mean(c);
        n.std[c] = op.normalize().std(c);
      }
      return n;
    }
    case v1::Op::kRandomErasing:
      return ErasingFrom(op.random_erasing());
    default:
      return std::nullopt;
  }
}

}  // namespace

void OpToProto(const Op& op, v1::Op* out) { std::visit(OpWriter{out}, op); }

std::optional<Op> OpFromProto(const v1::Op& op) {
  if (std::optional<Op> geometry = GeometryFrom(op)) return geometry;
  return AugmentFrom(op);
}

}  // namespace stoker::internal
