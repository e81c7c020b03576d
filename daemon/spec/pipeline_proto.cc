#include "daemon/spec/pipeline_proto.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/vocabulary_wire.h"
#include "daemon/spec/op_error.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {
namespace {

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

}  // namespace

// Position of each op kind in the accepted order.
int OpRank(v1::Op::KindCase kind) {
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
    case v1::Op::kPillowGaussianBlur:
      return 8;
    case v1::Op::kRandomSolarize:
      return 9;
    case v1::Op::kTrivialAugmentWide:
    case v1::Op::kRandAugment:
    case v1::Op::kAutoAugment:
    case v1::Op::kAugMix:
      return 10;
    case v1::Op::kNormalize:
      return 11;
    case v1::Op::kRandomErasing:
      return 12;
    default:
      return -1;
  }
}

// The rank of an op, a RandomChoice taking its first option's.
int RankOf(const v1::Op& op) {
  if (!op.has_random_choice()) return OpRank(op.kind_case());
  // ParseChoice names options that are no image op.
  const auto& options = op.random_choice().options();
  const int rank = options.empty() ? -1 : OpRank(options[0].kind_case());
  return rank < 0 ? kFirstImageStage : rank;
}

// The geometry ops and the automatic augmentations; ParseOp the others.
static absl::Status ParseShapeOrAugment(int i, const v1::Op& op, Pipeline* p) {
  switch (op.kind_case()) {
    case v1::Op::kRandomResizedCrop:
      return ParseCrop({i, "random_resized_crop"}, op.random_resized_crop(), p);
    case v1::Op::kResize:
      return ParseResize({i, "resize"}, op.resize(), p);
    case v1::Op::kCenterCrop:
      return ParseCenterCrop({i, "center_crop"}, op.center_crop(), p);
    case v1::Op::kPad:
      return ParsePad({i, "pad"}, op.pad(), p);
    case v1::Op::kRandomCrop:
      return ParseRandomCrop({i, "random_crop"}, op.random_crop(), p);
    case v1::Op::kTrivialAugmentWide:
      return ParseTrivialAugment({i, "trivial_augment_wide"},
                                 op.trivial_augment_wide(), p);
    case v1::Op::kRandAugment:
      return ParseRandAugment({i, "rand_augment"}, op.rand_augment(), p);
    case v1::Op::kAutoAugment:
      return ParseAutoAugment({i, "auto_augment"}, op.auto_augment(), p);
    case v1::Op::kAugMix:
      return ParseAugMix({i, "aug_mix"}, op.aug_mix(), p);
    default:
      return absl::OkStatus();
  }
}

// Parses one op into *p.
absl::Status ParseOp(int i, const v1::Op& op, Pipeline* p) {
  switch (op.kind_case()) {
    case v1::Op::kGaussianBlur:
      return ParseBlur({i, "gaussian_blur"}, op.gaussian_blur(), p);
    case v1::Op::kPillowGaussianBlur:
      return ParsePillowBlur({i, "pillow_gaussian_blur"},
                             op.pillow_gaussian_blur(), p);
    case v1::Op::kRandomSolarize:
      return ParseSolarize({i, "random_solarize"}, op.random_solarize(), p);
    case v1::Op::kRandomChoice:
      return ParseChoice(i, op.random_choice(), p);
    case v1::Op::kRandomHorizontalFlip: {
      const auto& f = op.random_horizontal_flip();
      return ParseProbability({i, "random_horizontal_flip"}, f.has_p(), f.p(),
                              0.5, &p->flip_p);
    }
    case v1::Op::kRandomVerticalFlip: {
      const auto& f = op.random_vertical_flip();
      return ParseProbability({i, "random_vertical_flip"}, f.has_p(), f.p(),
                              0.5, &p->vflip_p);
    }
    case v1::Op::kNormalize:
      return ParseNormalize({i, "normalize"}, op.normalize(), p);
    case v1::Op::kColorJitter:
      return ParseJitter({i, "color_jitter"}, op.color_jitter(), p);
    case v1::Op::kRandomErasing:
      return ParseErasing({i, "random_erasing"}, op.random_erasing(), p);
    case v1::Op::kRandomRotation:
      return ParseRotation({i, "random_rotation"}, op.random_rotation(), p);
    case v1::Op::kRandomAffine:
      return ParseAffine({i, "random_affine"}, op.random_affine(), p);
    case v1::Op::kRandomGrayscale: {
      const auto& g = op.random_grayscale();
      return ParseProbability({i, "random_grayscale"}, g.has_p(), g.p(), 0.1,
                              &p->gray_p);
    }
    default:
      return ParseShapeOrAugment(i, op, p);
  }
}

namespace {

// The op's field name in the wire's Op ("random_crop").
std::string OpName(const v1::Op& op) {
  const google::protobuf::FieldDescriptor* field =
      v1::Op::descriptor()->FindFieldByNumber(op.kind_case());
  return field != nullptr ? field->name() : "an unknown op";
}

absl::Status ParseOps(const v1::JobSpec& spec, Pipeline* p) {
  int last_rank = -1;
  for (int i = 0; i < spec.pipeline_size(); ++i) {
    const v1::Op& op = spec.pipeline(i);
    const int rank = RankOf(op);
    if (rank < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline[", i, "] names no known op"));
    }
    if (rank <= last_rank || !GeometryFits(spec, i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pipeline[", i, "]: impossible order: ", OpName(op),
          i == 0
              ? " cannot come first"
              : absl::StrCat(" cannot follow ", OpName(spec.pipeline(i - 1))),
          "; ops go crop or resize, flips, rotation or affine, colour, blur, "
          "solarize, an auto-augment policy, normalize, erasing "
          "(docs/transforms.md)"));
    }
    last_rank = rank;
    if (absl::Status status = ParseOp(i, op, p); !status.ok()) return status;
  }
  if (p->shorter_side > 0 && !p->center_crop && !p->crop.enabled) {
    return absl::InvalidArgumentError(
        "pipeline[0].resize.shorter_side makes images of varying size: follow "
        "it with center_crop or random_crop");
  }
  if (p->shorter_side_max > 0 && !p->crop.enabled) {
    return absl::InvalidArgumentError(
        "pipeline[0].resize.shorter_side_max (RandomResize) makes images of "
        "varying size: follow it with random_crop");
  }
  if (p->crop.after_flip && p->flip_p <= 0) {
    return absl::InvalidArgumentError(
        "random_crop.after_flip needs a random_horizontal_flip");
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
  if (!v1::FloatScale_IsValid(out.float_scale())) {
    return absl::InvalidArgumentError(
        absl::StrCat("output.float_scale: unknown value ", out.float_scale()));
  }
  p->scale_reciprocal = out.float_scale() == v1::FLOAT_SCALE_RECIPROCAL;
  if (p->scale_reciprocal && p->dtype == DType::kUInt8) {
    return absl::InvalidArgumentError(
        "output.float_scale applies to FLOAT32 and FLOAT16 output only");
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

// "MAJOR.MINOR[...]" as (major, minor); an empty one is the newest.
absl::StatusOr<std::pair<int, int>> ParseVersion(absl::string_view field,
                                                 const std::string& text) {
  if (text.empty()) return std::make_pair(std::numeric_limits<int>::max(), 0);
  const std::vector<absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits('.', 2));
  int major = 0, minor = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &major) ||
      !absl::SimpleAtoi(parts[1], &minor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("reference.", field, " \"", absl::CHexEscape(text),
                     "\" is not a MAJOR.MINOR version"));
  }
  return std::make_pair(major, minor);
}

absl::Status ParseReference(const v1::ReferenceVersions& reference,
                            Pipeline* p) {
  const auto pillow = ParseVersion("pillow", reference.pillow());
  if (!pillow.ok()) return pillow.status();
  const auto numpy = ParseVersion("numpy", reference.numpy());
  if (!numpy.ok()) return numpy.status();
  p->palette_tail_black = *pillow >= std::make_pair(10, 1);
  p->resample_order = PillowPassOrder(pillow->first, pillow->second);
  p->crop.whole_periods = *numpy >= std::make_pair(2, 1);
  return absl::OkStatus();
}

// The newest Pillow version before each change the pipeline follows
// (empty: the newest), so that the effective spec parses back the same.
std::string PillowBehaviour(const Pipeline& p) {
  if (!p.palette_tail_black) return "10.0";
  switch (p.resample_order) {
    case PassOrder::kHorizontalFirst:
      return "12.1";
    case PassOrder::kTallVerticalFirst:
      return "12.3";
    case PassOrder::kShrinkVerticalFirst:
      return "";
  }
  return "";
}

}  // namespace

absl::StatusOr<Pipeline> ParsePipeline(const v1::JobSpec& spec) {
  Pipeline p;
  if (absl::Status s = ParseOps(spec, &p); !s.ok()) return s;
  if (absl::Status s = ParseOutput(spec.output(), &p, spec.pipeline_size() > 0);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseReference(spec.reference(), &p); !s.ok()) return s;
  p.fast_resample = spec.fast_resample();
  return p;
}

void PipelineToProto(const Pipeline& p, v1::JobSpec* spec) {
  spec->clear_pipeline();
  spec->set_fast_resample(p.fast_resample);
  GeometryToProto(p, spec);
  for (int s = 0; s < kImageStages; ++s) {
    const ImageStage stage = static_cast<ImageStage>(s);
    if (p.choice && p.choice->stage == stage) {
      ChoiceToProto(*p.choice, spec);
    } else {
      StageToProto(p, stage, spec);
    }
  }
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
  out->set_float_scale(p.scale_reciprocal ? v1::FLOAT_SCALE_RECIPROCAL
                                          : v1::FLOAT_SCALE_DIVIDE);
  // The behaviours, as the newest versions before each change (empty: the
  // newest), so that the effective spec parses back to the same pipeline.
  spec->clear_reference();
  if (const std::string pillow = PillowBehaviour(p); !pillow.empty()) {
    spec->mutable_reference()->set_pillow(pillow);
  }
  if (!p.crop.whole_periods) spec->mutable_reference()->set_numpy("2.0");
}

}  // namespace stoker
