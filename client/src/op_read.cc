// Pipeline ops from their wire messages (op_convert.h).
#include "client/src/op_convert.h"
#include "common/vocabulary_wire.h"

namespace stoker::internal {
namespace {

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
Fill ReadFill(const Message& m) {
  return Fill(m.fill().begin(), m.fill().end());
}

template <typename Op, typename Message>
void ReadStyle(const Message& m, Op* o) {
  o->interpolation =
      m.has_interpolation()
          ? InterpolationFrom(m.interpolation(), Interpolation::kNearest)
          : Interpolation::kNearest;
  o->fill = ReadFill(m);
}

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
RandomCrop CropFrom(const v1::RandomCrop& p) {
  return RandomCrop{
      p.height(),        p.width(),     p.pad_left(),
      p.pad_top(),       p.pad_right(), p.pad_bottom(),
      p.pad_if_needed(), ReadFill(p),   ModeFrom(p.padding_mode()),
      p.pad_end(),       p.after_flip()};
}

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
          InterpolationFrom(p.interpolation(), Interpolation::kBilinear),
          p.shorter_side_max()};
    }
    case v1::Op::kCenterCrop:
      return CenterCrop{op.center_crop().height(), op.center_crop().width()};
    case v1::Op::kPad: {
      const auto& p = op.pad();
      return Pad{p.left(),   p.top(),     p.right(),
                 p.bottom(), ReadFill(p), ModeFrom(p.padding_mode())};
    }
    case v1::Op::kRandomCrop:
      return CropFrom(op.random_crop());
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

// The self-supervised recipes' Pillow ops.
std::optional<Op> PillowOpFrom(const v1::Op& op) {
  if (op.has_pillow_gaussian_blur()) {
    const auto& p = op.pillow_gaussian_blur();
    return PillowGaussianBlur{p.has_radius_min() ? p.radius_min() : 0.1f,
                              p.has_radius_max() ? p.radius_max() : 2.0f,
                              p.has_p() ? p.p() : 1.0f};
  }
  if (op.has_random_solarize()) {
    const auto& p = op.random_solarize();
    return RandomSolarize{p.has_threshold() ? p.threshold() : 128.0f,
                          p.has_p() ? p.p() : 0.5f};
  }
  return std::nullopt;
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

std::optional<Op> OpFromProto(const v1::Op& op) {
  if (std::optional<Op> geometry = GeometryFrom(op)) return geometry;
  if (std::optional<Op> pillow = PillowOpFrom(op)) return pillow;
  return AugmentFrom(op);
}

}  // namespace stoker::internal
