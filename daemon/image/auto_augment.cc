#include "daemon/image/auto_augment.h"

#include <cmath>
#include <span>

#include "daemon/image/counter_random.h"
#include "daemon/image/policies.h"

namespace stoker {
namespace {

using Kind = AutoAugmentSpec::Kind;
using Op = AugmentOp;

// A uniform float32 in [0, 1) on torch.rand's grid (multiples of 2^-24).
float UniformFloat(uint64_t key, uint64_t* k) {
  return float(CounterRandom(key, (*k)++) >> 40) * 0x1.0p-24f;
}

// top - (torch.arange(bins) / ((bins - 1) / levels)).round().int().
std::vector<float> PosterizeBits(int bins, double levels, int top = 8) {
  const float divisor = float((bins - 1) / levels);
  std::vector<float> out(bins);
  for (int i = 0; i < bins; ++i) {
    out[i] = float(top - int(std::nearbyint(float(i) / divisor)));
  }
  return out;
}

}  // namespace

std::vector<float> TorchLinspace(double start, double end, int steps) {
  std::vector<float> out(steps);
  if (steps == 1) {
    out[0] = float(start);
    return out;
  }
  const float s = float(start), e = float(end);
  const float step = (e - s) / float(steps - 1);
  const int halfway = steps / 2;
  for (int i = 0; i < steps; ++i) {
    out[i] =
        i < halfway ? s + step * float(i) : e - step * float(steps - i - 1);
  }
  return out;
}

std::vector<AugmentOp> AugmentationSpace(const AutoAugmentSpec& spec) {
  if (spec.kind == Kind::kAugMix) {  // its own order, and no Identity
    std::vector<AugmentOp> ops = {
        Op::kShearX,     Op::kShearY,       Op::kTranslateX,
        Op::kTranslateY, Op::kRotate,       Op::kPosterize,
        Op::kSolarize,   Op::kAutoContrast, Op::kEqualize};
    if (spec.all_ops) {
      ops.insert(ops.end(),
                 {Op::kBrightness, Op::kColor, Op::kContrast, Op::kSharpness});
    }
    return ops;
  }
  std::vector<AugmentOp> ops;
  const bool with_identity = spec.kind != Kind::kAutoAugment;
  for (int i = with_identity ? 0 : 1; i < kAugmentOpCount; ++i) {
    const Op op = static_cast<Op>(i);
    if (op == Op::kInvert && spec.kind != Kind::kAutoAugment) continue;
    ops.push_back(op);
  }
  return ops;
}

std::vector<float> MagnitudeTable(const AutoAugmentSpec& spec, AugmentOp op,
                                  ImageSize size, bool* signed_op) {
  // AutoAugment indexes RandAugment's space with 10 bins; AugMix its own.
  const int bins = spec.kind == Kind::kAutoAugment || spec.kind == Kind::kAugMix
                       ? 10
                       : spec.num_magnitude_bins;
  std::vector<float> table =
      ComputedTable(spec.kind, op, bins, size, signed_op);
  const std::vector<float>& given = spec.tables[static_cast<int>(op)];
  return given.empty() || table.empty() ? table : given;
}

std::vector<float> ComputedTable(AutoAugmentSpec::Kind kind, AugmentOp op,
                                 int bins, ImageSize size, bool* signed_op) {
  const bool wide = kind == Kind::kTrivialAugmentWide;
  const bool mix = kind == Kind::kAugMix;  // translations a third of a side
  *signed_op = true;
  switch (op) {
    case Op::kShearX:
    case Op::kShearY:
      return TorchLinspace(0.0, wide ? 0.99 : 0.3, bins);
    case Op::kTranslateX:
      return TorchLinspace(0.0,
                           wide  ? 32.0
                           : mix ? size.width / 3.0
                                 : 150.0 / 331.0 * size.width,
                           bins);
    case Op::kTranslateY:
      return TorchLinspace(0.0,
                           wide  ? 32.0
                           : mix ? size.height / 3.0
                                 : 150.0 / 331.0 * size.height,
                           bins);
    case Op::kRotate:
      return TorchLinspace(0.0, wide ? 135.0 : 30.0, bins);
    case Op::kBrightness:
    case Op::kColor:
    case Op::kContrast:
    case Op::kSharpness:
      return TorchLinspace(0.0, wide ? 0.99 : 0.9, bins);
    case Op::kPosterize:
      *signed_op = false;
      return PosterizeBits(bins, wide ? 6.0 : 4.0, mix ? 4 : 8);
    case Op::kSolarize:
      *signed_op = false;
      return TorchLinspace(255.0, 0.0, bins);
    default:
      *signed_op = false;
      return {};
  }
}

DrawnOps DrawAutoAugment(const AutoAugmentSpec& spec, ImageSize size,
                         uint64_t key) {
  DrawnOps drawn;
  uint64_t k = 0;
  if (spec.kind == Kind::kAutoAugment) {
    const std::span<const PolicyStep> steps = PolicySteps(spec.policy);
    const size_t id = UniformBelow(key, &k, steps.size() / 2);
    const float probs[2] = {UniformFloat(key, &k), UniformFloat(key, &k)};
    const uint64_t signs[2] = {UniformBelow(key, &k, 2),
                               UniformBelow(key, &k, 2)};
    for (int i = 0; i < 2; ++i) {
      const PolicyStep& step = steps[2 * id + i];
      if (!(probs[i] <= step.p)) continue;
      bool is_signed = false;
      const std::vector<float> table =
          MagnitudeTable(spec, step.op, size, &is_signed);
      double magnitude =
          step.magnitude_id >= 0 ? table[step.magnitude_id] : 0.0;
      if (is_signed && signs[i] == 0) magnitude *= -1.0;
      drawn.ops[drawn.count++] = {step.op, magnitude};
    }
    return drawn;
  }
  const std::vector<AugmentOp> space = AugmentationSpace(spec);
  const int rounds = spec.kind == Kind::kRandAugment ? spec.num_ops : 1;
  for (int r = 0; r < rounds && r < kMaxAugmentOps; ++r) {
    const Op op = space[UniformBelow(key, &k, space.size())];
    bool is_signed = false;
    const std::vector<float> table = MagnitudeTable(spec, op, size, &is_signed);
    double magnitude = 0.0;
    if (!table.empty()) {
      const size_t bin = spec.kind == Kind::kRandAugment
                             ? size_t(spec.magnitude)
                             : UniformBelow(key, &k, table.size());
      magnitude = table[bin];
    }
    if (is_signed && UniformBelow(key, &k, 2) == 1) magnitude *= -1.0;
    drawn.ops[drawn.count++] = {op, magnitude};
  }
  return drawn;
}

void ApplyDrawnOps(const DrawnOps& drawn, const AugmentStyle& style,
                   ImageSize size, uint8_t* planes,
                   std::vector<uint8_t>* scratch) {
  for (int i = 0; i < drawn.count; ++i) {
    ApplyAugmentOp(drawn.ops[i].op, drawn.ops[i].magnitude, style, size, planes,
                   scratch);
  }
}

}  // namespace stoker
