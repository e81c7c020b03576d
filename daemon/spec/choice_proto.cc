// RandomChoice of image ops in a JobSpec, and the image ops of one stage
// back to the wire: validation and back.
#include <memory>

#include "absl/strings/str_cat.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {

// RandomChoice: 2 to 16 options of one image stage, each parsed into its
// own pipeline of the output's size, and their weights.
absl::Status ParseChoice(int i, const v1::RandomChoice& op, Pipeline* p) {
  const OpError e{i, "random_choice"};
  const int n = op.options_size();
  if (n < 2 || n > kMaxChoices) {
    return e.Bad("options",
                 absl::StrCat("needs 2 to ", kMaxChoices, " ops, got ", n));
  }
  auto choice = std::make_shared<ChoiceSpec>();
  const int rank = OpRank(op.options(0).kind_case());
  for (int j = 0; j < n; ++j) {
    const v1::Op& option = op.options(j);
    const int r = OpRank(option.kind_case());
    if (r < kFirstImageStage || r >= kFirstImageStage + kImageStages ||
        r != rank) {
      return e.Bad(
          absl::StrCat("options[", j, "]"),
          "must be an image op (a flip, a rotation or affine warp, "
          "color_jitter, random_grayscale, a blur, random_solarize or an "
          "automatic augmentation) of the same kind as options[0]");
    }
    Pipeline one;
    one.output = p->output;
    if (absl::Status s = ParseOp(i, option, &one); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pipeline[", i, "].random_choice.options[", j, "]: ", s.message()));
    }
    choice->options.push_back(std::move(one));
  }
  if (op.p_size() != 0 && op.p_size() != n) {
    return e.Bad("p", absl::StrCat("needs one weight per option (", n,
                                   "), got ", op.p_size()));
  }
  double total = 0;
  for (int j = 0; j < n; ++j) {
    const double w = op.p_size() ? op.p(j) : 1.0;
    if (!(w >= 0 && w <= 1e6)) {
      return e.Bad("p", absl::StrCat("weights must be in [0, 1e6], got ", w));
    }
    choice->weights.push_back(w);
    total += w;
  }
  if (!(total > 0)) return e.Bad("p", "weights are all 0");
  choice->stage = static_cast<ImageStage>(rank - kFirstImageStage);
  p->choice = std::move(choice);
  return absl::OkStatus();
}

// Appends the op of `stage` in `p` (if any).
void StageToProto(const Pipeline& p, ImageStage stage, v1::JobSpec* spec) {
  switch (stage) {
    case ImageStage::kFlip:
      if (p.flip_p > 0) {
        spec->add_pipeline()->mutable_random_horizontal_flip()->set_p(p.flip_p);
      }
      return;
    case ImageStage::kVerticalFlip:
      if (p.vflip_p > 0) {
        spec->add_pipeline()->mutable_random_vertical_flip()->set_p(p.vflip_p);
      }
      return;
    case ImageStage::kWarp:
      return WarpToProto(p.warp, spec);
    case ImageStage::kJitter:
      if (p.jitter()) {
        auto* op = spec->add_pipeline()->mutable_color_jitter();
        if (p.jitter_p < 1) op->set_p(p.jitter_p);
        op->set_brightness(p.brightness);
        op->set_contrast(p.contrast);
        op->set_saturation(p.saturation);
        op->set_hue(p.hue);
      }
      return;
    case ImageStage::kGrayscale:
      if (p.gray_p > 0) {
        spec->add_pipeline()->mutable_random_grayscale()->set_p(p.gray_p);
      }
      return;
    case ImageStage::kBlur:
      return BlurToProto(p.blur, spec);
    case ImageStage::kSolarize:
      if (p.solarize.p > 0) SolarizeToProto(p.solarize, spec);
      return;
    case ImageStage::kAugment:
      return AugmentToProto(p.augment, spec);
  }
}

void ChoiceToProto(const ChoiceSpec& c, v1::JobSpec* spec) {
  auto* op = spec->add_pipeline()->mutable_random_choice();
  for (size_t j = 0; j < c.options.size(); ++j) {
    v1::JobSpec one;
    StageToProto(c.options[j], c.stage, &one);
    v1::Op* option = op->add_options();
    if (one.pipeline_size() == 1) {
      *option = one.pipeline(0);
    } else if (c.stage == ImageStage::kFlip) {  // p = 0 writes nothing
      option->mutable_random_horizontal_flip()->set_p(0);
    } else if (c.stage == ImageStage::kVerticalFlip) {
      option->mutable_random_vertical_flip()->set_p(0);
    } else if (c.stage == ImageStage::kSolarize) {
      v1::JobSpec zero;
      SolarizeToProto(c.options[j].solarize, &zero);
      *option = zero.pipeline(0);
    } else {
      option->mutable_random_grayscale()->set_p(0);
    }
    op->add_p(float(c.weights[j]));
  }
}

}  // namespace stoker
