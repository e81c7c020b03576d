#include "daemon/spec/pipeline_proto.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/vocabulary_wire.h"
#include "daemon/spec/augment_proto.h"
#include "daemon/spec/op_error.h"

namespace stoker {
namespace {

absl::Status ParseCrop(const OpError& e, const v1::RandomResizedCrop& op,
                       Pipeline* p) {
  if (auto s = e.Side("height", op.height()); !s.ok()) return s;
  if (auto s = e.Side("width", op.width()); !s.ok()) return s;
  p->geometry = Pipeline::Geometry::kRandomResizedCrop;
  p->output = {int(op.width()), int(op.height())};
  p->scale_min = op.has_scale_min() ? op.scale_min() : 0.08;
  p->scale_max = op.has_scale_max() ? op.scale_max() : 1.0;
  p->ratio_min = op.has_ratio_min() ? op.ratio_min() : 3.0 / 4.0;
  p->ratio_max = op.has_ratio_max() ? op.ratio_max() : 4.0 / 3.0;
  if (!(p->scale_min > 0 && p->scale_min <= 1)) {
    return e.Bad("scale_min",
                 absl::StrCat("must be in (0, 1], got ", p->scale_min));
  }
  if (!(p->scale_max >= p->scale_min && p->scale_max <= 1)) {
    return e.Bad("scale_max",
                 absl::StrCat("must be in [scale_min, 1], got ", p->scale_max));
  }
  if (!(p->ratio_min > 0 && p->ratio_min <= 100)) {
    return e.Bad("ratio_min",
                 absl::StrCat("must be in (0, 100], got ", p->ratio_min));
  }
  if (!(p->ratio_max >= p->ratio_min && p->ratio_max <= 100)) {
    return e.Bad("ratio_max", absl::StrCat("must be in [ratio_min, 100], got ",
                                           p->ratio_max));
  }
  auto interpolation = ParseInterpolation(e, op.interpolation());
  if (!interpolation.ok()) return interpolation.status();
  p->interpolation = *interpolation;
  return absl::OkStatus();
}

absl::Status ParseResize(const OpError& e, const v1::Resize& op, Pipeline* p) {
  const bool by_side = op.shorter_side() != 0;
  if (by_side == (op.height() != 0 || op.width() != 0)) {
    return e.Bad("shorter_side",
                 "or height and width: set exactly one of them");
  }
  if (by_side) {
    if (auto s = e.Side("shorter_side", op.shorter_side()); !s.ok()) return s;
    p->shorter_side = int(op.shorter_side());
  } else {
    if (auto s = e.Side("height", op.height()); !s.ok()) return s;
    if (auto s = e.Side("width", op.width()); !s.ok()) return s;
    p->resized = {int(op.width()), int(op.height())};
    p->output = p->resized;
  }
  auto interpolation = ParseInterpolation(e, op.interpolation());
  if (!interpolation.ok()) return interpolation.status();
  p->interpolation = *interpolation;
  return absl::OkStatus();
}

absl::Status ParseCenterCrop(const OpError& e, const v1::CenterCrop& op,
                             Pipeline* p) {
  if (auto s = e.Side("height", op.height()); !s.ok()) return s;
  if (auto s = e.Side("width", op.width()); !s.ok()) return s;
  const int h = int(op.height()), w = int(op.width());
  const bool fits = p->shorter_side > 0
                        ? h <= p->shorter_side && w <= p->shorter_side
                        : h <= p->resized.height && w <= p->resized.width;
  if (!fits) {
    return e.Bad("height", "and width must fit inside the resized image");
  }
  p->center_crop = true;
  p->output = {w, h};
  return absl::OkStatus();
}

absl::Status ParseNormalize(const OpError& e, const v1::Normalize& op,
                            Pipeline* p) {
  if (op.mean_size() != 3) return e.Bad("mean", "needs 3 values (R, G, B)");
  if (op.std_size() != 3) return e.Bad("std", "needs 3 values (R, G, B)");
  for (int c = 0; c < 3; ++c) {
    if (!(op.std(c) > 0) || !std::isfinite(op.std(c))) {
      return e.Bad(absl::StrCat("std[", c, "]"), "must be > 0");
    }
    if (!std::isfinite(op.mean(c))) {
      return e.Bad(absl::StrCat("mean[", c, "]"), "must be finite");
    }
    p->mean[c] = op.mean(c);
    p->std[c] = op.std(c);
  }
  p->normalize = true;
  return absl::OkStatus();
}

absl::Status ParseJitter(const OpError& e, const v1::ColorJitter& op,
                         Pipeline* p) {
  const float values[3] = {op.brightness(), op.contrast(), op.saturation()};
  const char* names[3] = {"brightness", "contrast", "saturation"};
  for (int i = 0; i < 3; ++i) {
    if (!(values[i] >= 0 && values[i] <= 100)) {
      return e.Bad(names[i],
                   absl::StrCat("must be in [0, 100], got ", values[i]));
    }
  }
  p->brightness = values[0];
  p->contrast = values[1];
  p->saturation = values[2];
  if (!(op.hue() >= 0 && op.hue() <= 0.5f)) {
    return e.Bad("hue", absl::StrCat("must be in [0, 0.5], got ", op.hue()));
  }
  p->hue = op.hue();
  if (!p->jitter()) {
    return e.Bad("brightness", "contrast, saturation and hue are all 0");
  }
  return ParseProbability(e, op.has_p(), op.p(), 1.0, &p->jitter_p);
}

// Position of each op kind in the accepted order.
int Rank(v1::Op::KindCase kind) {
  switch (kind) {
    case v1::Op::kRandomResizedCrop:
    case v1::Op::kResize:
      return 0;
    case v1::Op::kPad:
      return 1;
    case v1::Op::kCenterCrop:
    case v1::Op::kRandomCrop:
      return 2;
    case v1::Op::kRandomHorizontalFlip:
      return 3;
    case v1::Op::kRandomVerticalFlip:
      return 4;
    case v1::Op::kRandomRotation:
    case v1::Op::kRandomAffine:
      return 5;
    case v1::Op::kColorJitter:
      return 6;
    case v1::Op::kRandomGrayscale:
      return 7;
    case v1::Op::kGaussianBlur:
      return 8;
    case v1::Op::kTrivialAugmentWide:
    case v1::Op::kRandAugment:
    case v1::Op::kAutoAugment:
      return 9;
    case v1::Op::kNormalize:
      return 10;
    case v1::Op::kRandomErasing:
      return 11;
    default:
      return -1;
  }
}

// Parses one op into *p.
absl::Status ParseOp(int i, const v1::Op& op, Pipeline* p) {
  absl::Status status;
  switch (op.kind_case()) {
    case v1::Op::kRandomResizedCrop:
      status =
          ParseCrop({i, "random_resized_crop"}, op.random_resized_crop(), p);
      break;
    case v1::Op::kResize:
      status = ParseResize({i, "resize"}, op.resize(), p);
      break;
    case v1::Op::kCenterCrop:
      status = ParseCenterCrop({i, "center_crop"}, op.center_crop(), p);
      break;
    case v1::Op::kPad:
      status = ParsePad({i, "pad"}, op.pad(), p);
      break;
    case v1::Op::kRandomCrop:
      status = ParseRandomCrop({i, "random_crop"}, op.random_crop(), p);
      break;
    case v1::Op::kGaussianBlur:
      status = ParseBlur({i, "gaussian_blur"}, op.gaussian_blur(), p);
      break;
    case v1::Op::kRandomHorizontalFlip: {
      const auto& f = op.random_horizontal_flip();
      status = ParseProbability({i, "random_horizontal_flip"}, f.has_p(), f.p(),
                                0.5, &p->flip_p);
      break;
    }
    case v1::Op::kNormalize:
      status = ParseNormalize({i, "normalize"}, op.normalize(), p);
      break;
    case v1::Op::kColorJitter:
      status = ParseJitter({i, "color_jitter"}, op.color_jitter(), p);
      break;
    case v1::Op::kTrivialAugmentWide:
      status = ParseTrivialAugment({i, "trivial_augment_wide"},
                                   op.trivial_augment_wide(), p);
      break;
    case v1::Op::kRandAugment:
      status = ParseRandAugment({i, "rand_augment"}, op.rand_augment(), p);
      break;
    case v1::Op::kAutoAugment:
      status = ParseAutoAugment({i, "auto_augment"}, op.auto_augment(), p);
      break;
    case v1::Op::kRandomErasing:
      status = ParseErasing({i, "random_erasing"}, op.random_erasing(), p);
      break;
    case v1::Op::kRandomVerticalFlip:
      status = ParseProbability(
          {i, "random_vertical_flip"}, op.random_vertical_flip().has_p(),
          op.random_vertical_flip().p(), 0.5, &p->vflip_p);
      break;
    case v1::Op::kRandomRotation:
      status = ParseRotation({i, "random_rotation"}, op.random_rotation(), p);
      break;
    case v1::Op::kRandomAffine:
      status = ParseAffine({i, "random_affine"}, op.random_affine(), p);
      break;
    case v1::Op::kRandomGrayscale: {
      const auto& g = op.random_grayscale();
      status = ParseProbability({i, "random_grayscale"}, g.has_p(), g.p(), 0.1,
                                &p->gray_p);
      break;
    }
    default:
      break;
  }
  return status;
}

// Whether op i may stand where it is among the geometry ops: they come
// first, as random_resized_crop; resize [center_crop]; or [resize] [pad]
// random_crop.
bool GeometryFits(const v1::JobSpec& spec, int i) {
  const v1::Op& op = spec.pipeline(i);
  const bool after_resize = i > 0 && spec.pipeline(i - 1).has_resize();
  switch (op.kind_case()) {
    case v1::Op::kRandomResizedCrop:
    case v1::Op::kResize:
      return i == 0;
    case v1::Op::kCenterCrop:
      return after_resize;
    case v1::Op::kPad:
      return (i == 0 || after_resize) && i + 1 < spec.pipeline_size() &&
             spec.pipeline(i + 1).has_random_crop();
    case v1::Op::kRandomCrop:
      return i == 0 || after_resize || spec.pipeline(i - 1).has_pad();
    default:
      return i > 0;  // after the geometry
  }
}

absl::Status ParseOps(const v1::JobSpec& spec, Pipeline* p) {
  int last_rank = -1;
  for (int i = 0; i < spec.pipeline_size(); ++i) {
    const v1::Op& op = spec.pipeline(i);
    const int rank = Rank(op.kind_case());
    if (rank < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline[", i, "] names no known op"));
    }
    if (rank <= last_rank || !GeometryFits(spec, i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pipeline[", i,
          "]: impossible order; accepted: random_resized_crop, or resize "
          "[center_crop], or [resize] [pad] random_crop; then "
          "[random_horizontal_flip] "
          "[random_vertical_flip] [random_rotation | random_affine] "
          "[color_jitter] [random_grayscale] [gaussian_blur] "
          "[trivial_augment_wide | rand_augment | auto_augment] [normalize] "
          "[random_erasing]"));
    }
    last_rank = rank;
    if (absl::Status status = ParseOp(i, op, p); !status.ok()) return status;
  }
  if (p->shorter_side > 0 && !p->center_crop && !p->crop.enabled) {
    return absl::InvalidArgumentError(
        "pipeline[0].resize.shorter_side makes images of varying size: follow "
        "it with center_crop or random_crop");
  }
  return absl::OkStatus();
}

absl::Status ParseOutput(const v1::OutputSpec& out, Pipeline* p,
                         bool have_ops) {
  if (!have_ops) {
    if (out.height() < 1 || out.height() > kMaxSide || out.width() < 1 ||
        out.width() > kMaxSide) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output.height and output.width must be in [1, ", kMaxSide,
          "] when there is no pipeline, got ", out.height(), "x", out.width()));
    }
    p->resized = p->output = {int(out.width()), int(out.height())};
  } else if ((out.height() != 0 && int(out.height()) != p->output.height) ||
             (out.width() != 0 && int(out.width()) != p->output.width)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output.height x output.width ", out.height(), "x", out.width(),
        " differs from the pipeline's ", p->output.height, "x", p->output.width,
        " (leave them 0)"));
  }
  const std::optional<DType> dtype = FromWire(out.dtype());
  if (!dtype) {
    return absl::InvalidArgumentError(
        v1::DType_IsValid(out.dtype())
            ? absl::StrCat("output.dtype ", v1::DType_Name(out.dtype()),
                           " is not an image type (UINT8, FLOAT32, FLOAT16)")
            : absl::StrCat("output.dtype: unknown value ", out.dtype()));
  }
  p->dtype = *dtype;
  const std::optional<Layout> layout = FromWire(out.layout());
  if (out.layout() == v1::LAYOUT_UNSPECIFIED) {
    p->layout = p->dtype == DType::kUInt8 ? Layout::kNHWC : Layout::kNCHW;
  } else if (layout) {
    p->layout = *layout;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("output.layout: unknown value ", out.layout()));
  }
  if (p->normalize && p->dtype == DType::kUInt8) {
    return absl::InvalidArgumentError(
        "normalize needs output.dtype FLOAT32 or FLOAT16 (uint8 output is "
        "meant to be normalised on the GPU)");
  }
  if (p->erasing.enabled && p->dtype == DType::kUInt8) {
    return absl::InvalidArgumentError(
        "random_erasing needs output.dtype FLOAT32 or FLOAT16 (it erases the "
        "tensor, as torchvision's RandomErasing after ToTensor)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Pipeline> ParsePipeline(const v1::JobSpec& spec) {
  Pipeline p;
  if (absl::Status s = ParseOps(spec, &p); !s.ok()) return s;
  if (absl::Status s = ParseOutput(spec.output(), &p, spec.pipeline_size() > 0);
      !s.ok()) {
    return s;
  }
  p.fast_resample = spec.fast_resample();
  return p;
}

static void ResizeToProto(const Pipeline& p, v1::JobSpec* spec) {
  auto* op = spec->add_pipeline()->mutable_resize();
  if (p.shorter_side > 0) {
    op->set_shorter_side(p.shorter_side);
  } else {
    op->set_height(p.resized.height);
    op->set_width(p.resized.width);
  }
  op->set_interpolation(ToWire(p.interpolation));
}

// The geometry ops: a random resized crop, a resize and its centre crop,
// or [a resize] [a pad] and a random crop.
static void GeometryToProto(const Pipeline& p, v1::JobSpec* spec) {
  const v1::Interpolation interpolation = ToWire(p.interpolation);
  if (p.geometry == Pipeline::Geometry::kRandomCrop) {
    if (ResizesBeforeCrop(p)) ResizeToProto(p, spec);
    CropToProto(p.crop, p.output, spec);
  } else if (p.geometry == Pipeline::Geometry::kRandomResizedCrop) {
    auto* op = spec->add_pipeline()->mutable_random_resized_crop();
    op->set_height(p.output.height);
    op->set_width(p.output.width);
    op->set_scale_min(p.scale_min);
    op->set_scale_max(p.scale_max);
    op->set_ratio_min(p.ratio_min);
    op->set_ratio_max(p.ratio_max);
    op->set_interpolation(interpolation);
  } else {
    ResizeToProto(p, spec);
    if (p.center_crop) {
      auto* crop = spec->add_pipeline()->mutable_center_crop();
      crop->set_height(p.output.height);
      crop->set_width(p.output.width);
    }
  }
}

void PipelineToProto(const Pipeline& p, v1::JobSpec* spec) {
  spec->clear_pipeline();
  spec->set_fast_resample(p.fast_resample);
  GeometryToProto(p, spec);
  if (p.flip_p > 0) {
    spec->add_pipeline()->mutable_random_horizontal_flip()->set_p(p.flip_p);
  }
  if (p.vflip_p > 0) {
    spec->add_pipeline()->mutable_random_vertical_flip()->set_p(p.vflip_p);
  }
  WarpToProto(p.warp, spec);
  if (p.jitter()) {
    auto* op = spec->add_pipeline()->mutable_color_jitter();
    if (p.jitter_p < 1) op->set_p(p.jitter_p);
    op->set_brightness(p.brightness);
    op->set_contrast(p.contrast);
    op->set_saturation(p.saturation);
    op->set_hue(p.hue);
  }
  if (p.gray_p > 0) {
    spec->add_pipeline()->mutable_random_grayscale()->set_p(p.gray_p);
  }
  BlurToProto(p.blur, spec);
  AugmentToProto(p.augment, spec);
  if (p.normalize) {
    auto* op = spec->add_pipeline()->mutable_normalize();
    for (int c = 0; c < 3; ++c) {
      op->add_mean(p.mean[c]);
      op->add_std(p.std[c]);
    }
  }
  ErasingToProto(p.erasing, spec);
  auto* out = spec->mutable_output();
  out->set_height(p.output.height);
  out->set_width(p.output.width);
  out->set_dtype(ToWire(p.dtype));
  out->set_layout(ToWire(p.layout));
}

}  // namespace stoker
