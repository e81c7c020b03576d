#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "daemon/image/aug_mix.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {
namespace {

using Kind = AutoAugmentSpec::Kind;
using Policy = AutoAugmentSpec::Policy;

// A name quoted in a message, cut to a bound.
std::string Cut(const std::string& name) {
  return name.size() <= 64 ? name : name.substr(0, 64) + "...";
}

absl::Status ParseBins(const OpError& e, bool has, uint32_t value, int* bins) {
  *bins = has ? int(value) : 31;
  if (*bins < 2 || *bins > kMaxMagnitudeBins) {
    return e.Bad(
        "num_magnitude_bins",
        absl::StrCat("must be in [2, ", kMaxMagnitudeBins, "], got ", value));
  }
  return absl::OkStatus();
}

// The range a given magnitude may take, per op: wider than torchvision's
// tables, narrow enough that no warp coordinate overflows.
bool InRange(AugmentOp op, float v) {
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
      return std::fabs(v) <= 10;
    case AugmentOp::kTranslateX:
    case AugmentOp::kTranslateY:
      return std::fabs(v) <= float(kMaxSide);
    case AugmentOp::kRotate:
      return std::fabs(v) <= 3600;
    case AugmentOp::kPosterize:
      return v >= 0 && v <= 8 && v == std::floor(v);
    case AugmentOp::kSolarize:
      return v >= 0 && v <= 256;
    default:  // the enhancements: a factor 1 + v in [0, 100]
      return v >= -1 && v <= 99;
  }
}

// magnitudes: tables in place of the computed ones, for ops of the space
// that take a magnitude, `bins` values each.
absl::Status ParseTables(
    const OpError& e,
    const google::protobuf::RepeatedPtrField<v1::MagnitudeTable>& given,
    AutoAugmentSpec* a) {
  const int bins = a->kind == Kind::kAutoAugment || a->kind == Kind::kAugMix
                       ? 10
                       : a->num_magnitude_bins;
  const std::vector<AugmentOp> space = AugmentationSpace(*a);
  for (const v1::MagnitudeTable& t : given) {
    const std::optional<AugmentOp> op = AugmentOpByName(t.op());
    bool is_signed = false;
    if (!op || std::find(space.begin(), space.end(), *op) == space.end() ||
        ComputedTable(a->kind, *op, bins, {1, 1}, &is_signed).empty()) {
      return e.Bad("magnitudes", absl::StrCat("names no op of this "
                                              "augmentation with magnitudes: ",
                                              Cut(t.op())));
    }
    if (t.values_size() != bins) {
      return e.Bad("magnitudes",
                   absl::StrCat("of ", t.op(), " needs ", bins, " values, got ",
                                t.values_size()));
    }
    std::vector<float>& table = a->tables[static_cast<int>(*op)];
    table.assign(t.values().begin(), t.values().end());
    for (float v : table) {
      if (!std::isfinite(v) || !InRange(*op, v)) {
        return e.Bad("magnitudes", absl::StrCat("of ", t.op(), " holds ", v,
                                                ", outside the op's range"));
      }
    }
  }
  return absl::OkStatus();
}

void WriteTables(const AutoAugmentSpec& a,
                 google::protobuf::RepeatedPtrField<v1::MagnitudeTable>* out) {
  for (int i = 0; i < kAugmentOpCount; ++i) {
    if (a.tables[i].empty()) continue;
    v1::MagnitudeTable* t = out->Add();
    t->set_op(std::string(AugmentOpName(static_cast<AugmentOp>(i))));
    for (float v : a.tables[i]) t->add_values(v);
  }
}

template <typename OpProto>
void WriteStyle(const AugmentStyle& style, OpProto* op) {
  op->set_interpolation(ToWire(style.interpolation));
  if (style.fill != FillColor{0, 0, 0}) {
    for (uint8_t v : style.fill) op->add_fill(v);
  }
}

}  // namespace

absl::Status ParseTrivialAugment(const OpError& e,
                                 const v1::TrivialAugmentWide& op,
                                 Pipeline* p) {
  AutoAugmentSpec& a = p->augment;
  a.kind = Kind::kTrivialAugmentWide;
  if (auto s = ParseBins(e, op.has_num_magnitude_bins(),
                         op.num_magnitude_bins(), &a.num_magnitude_bins);
      !s.ok()) {
    return s;
  }
  if (auto s = ParseTables(e, op.magnitudes(), &a); !s.ok()) return s;
  return ParseAugmentStyle(e, op, &a.style);
}

absl::Status ParseRandAugment(const OpError& e, const v1::RandAugment& op,
                              Pipeline* p) {
  AutoAugmentSpec& a = p->augment;
  a.kind = Kind::kRandAugment;
  if (auto s = ParseBins(e, op.has_num_magnitude_bins(),
                         op.num_magnitude_bins(), &a.num_magnitude_bins);
      !s.ok()) {
    return s;
  }
  a.num_ops = op.has_num_ops() ? int(op.num_ops()) : 2;
  if (op.num_ops() > uint32_t(kMaxAugmentOps)) {
    return e.Bad("num_ops", absl::StrCat("must be in [0, ", kMaxAugmentOps,
                                         "], got ", op.num_ops()));
  }
  a.magnitude = op.has_magnitude() ? int(op.magnitude()) : 9;
  if (op.magnitude() >= uint32_t(a.num_magnitude_bins)) {
    return e.Bad("magnitude",
                 absl::StrCat("must be below num_magnitude_bins (",
                              a.num_magnitude_bins, "), got ", op.magnitude()));
  }
  if (auto s = ParseTables(e, op.magnitudes(), &a); !s.ok()) return s;
  return ParseAugmentStyle(e, op, &a.style);
}

absl::Status ParseAutoAugment(const OpError& e, const v1::AutoAugment& op,
                              Pipeline* p) {
  AutoAugmentSpec& a = p->augment;
  a.kind = Kind::kAutoAugment;
  switch (op.policy()) {
    case v1::AUTO_AUGMENT_POLICY_UNSPECIFIED:
    case v1::AUTO_AUGMENT_POLICY_IMAGENET:
      a.policy = Policy::kImageNet;
      break;
    case v1::AUTO_AUGMENT_POLICY_CIFAR10:
      a.policy = Policy::kCifar10;
      break;
    case v1::AUTO_AUGMENT_POLICY_SVHN:
      a.policy = Policy::kSvhn;
      break;
    default:
      return e.Bad("policy", absl::StrCat("has unknown value ", op.policy()));
  }
  if (auto s = ParseTables(e, op.magnitudes(), &a); !s.ok()) return s;
  return ParseAugmentStyle(e, op, &a.style);
}

absl::Status ParseAugMix(const OpError& e, const v1::AugMix& op, Pipeline* p) {
  AutoAugmentSpec& a = p->augment;
  a.kind = Kind::kAugMix;
  a.severity = op.has_severity() ? int(op.severity()) : 3;
  if (a.severity < 1 || a.severity > 10) {
    return e.Bad("severity",
                 absl::StrCat("must be in [1, 10], got ", op.severity()));
  }
  a.mixture_width = op.has_mixture_width() ? int(op.mixture_width()) : 3;
  if (a.mixture_width < 1 || a.mixture_width > kMaxAugMixWidth) {
    return e.Bad("mixture_width",
                 absl::StrCat("must be in [1, ", kMaxAugMixWidth, "], got ",
                              op.mixture_width()));
  }
  a.chain_depth = op.has_chain_depth() ? op.chain_depth() : -1;
  if (a.chain_depth > kMaxAugMixDepth || a.chain_depth < -1) {
    return e.Bad(
        "chain_depth",
        absl::StrCat("must be in [-1, ", kMaxAugMixDepth,
                     "] (0 or -1: 1 to 3 drawn), got ", a.chain_depth));
  }
  a.alpha = op.has_alpha() ? op.alpha() : 1.0;
  if (!(a.alpha >= 0.01 && a.alpha <= 100)) {
    return e.Bad("alpha",
                 absl::StrCat("must be in [0.01, 100], got ", a.alpha));
  }
  const double work = double(a.mixture_width) *
                      (a.chain_depth > 0 ? a.chain_depth : 3) *
                      double(p->output.Pixels());
  if (work > kMaxAugMixWork) {
    return e.Bad(
        "mixture_width",
        absl::StrCat("* chain_depth * the image's pixels must be at "
                     "most ",
                     kMaxAugMixWork, " (a sample's work), got ", work));
  }
  a.all_ops = !op.has_all_ops() || op.all_ops();
  a.has_fill = op.fill_size() > 0;
  if (auto s = ParseTables(e, op.magnitudes(), &a); !s.ok()) return s;
  // AugMix warps a tensor: torch's bicubic is not Pillow's.
  if (auto s = ParseAugmentStyle(e, op, &a.style, false); !s.ok()) return s;
  if (!op.has_interpolation()) a.style.interpolation = Interpolation::kBilinear;
  return absl::OkStatus();
}

absl::Status ParseErasing(const OpError& e, const v1::RandomErasing& op,
                          Pipeline* p) {
  ErasingSpec& r = p->erasing;
  r.enabled = true;
  r.p = op.has_p() ? op.p() : 0.5;
  r.scale_min = op.has_scale_min() ? op.scale_min() : 0.02;
  r.scale_max = op.has_scale_max() ? op.scale_max() : 0.33;
  r.ratio_min = op.has_ratio_min() ? op.ratio_min() : 0.3;
  r.ratio_max = op.has_ratio_max() ? op.ratio_max() : 3.3;
  if (!(r.p >= 0 && r.p <= 1)) {
    return e.Bad("p", absl::StrCat("must be in [0, 1], got ", r.p));
  }
  if (!(r.scale_min >= 0 && r.scale_min <= r.scale_max && r.scale_max <= 1)) {
    return e.Bad("scale_min",
                 "and scale_max must satisfy 0 <= min <= max <= 1");
  }
  if (!(r.ratio_min > 0 && r.ratio_min <= r.ratio_max && r.ratio_max <= 100)) {
    return e.Bad("ratio_min",
                 "and ratio_max must satisfy 0 < min <= max <= 100");
  }
  const int n = op.value_size();
  if (n != 0 && n != 1 && n != 3) {
    return e.Bad("value", absl::StrCat("needs 0, 1 or 3 values, got ", n));
  }
  if (n > 0 && op.random_value()) {
    return e.Bad("value", "and random_value exclude each other");
  }
  for (int c = 0; c < 3; ++c) {
    r.value[c] = n == 0 ? 0.0f : op.value(n == 1 ? 0 : c);
    if (!std::isfinite(r.value[c])) return e.Bad("value", "must be finite");
  }
  r.random_value = op.random_value();
  return absl::OkStatus();
}

void AugmentToProto(const AutoAugmentSpec& a, v1::JobSpec* spec) {
  switch (a.kind) {
    case Kind::kNone:
      return;
    case Kind::kTrivialAugmentWide: {
      auto* op = spec->add_pipeline()->mutable_trivial_augment_wide();
      op->set_num_magnitude_bins(a.num_magnitude_bins);
      WriteTables(a, op->mutable_magnitudes());
      return WriteStyle(a.style, op);
    }
    case Kind::kRandAugment: {
      auto* op = spec->add_pipeline()->mutable_rand_augment();
      op->set_num_ops(a.num_ops);
      op->set_magnitude(a.magnitude);
      op->set_num_magnitude_bins(a.num_magnitude_bins);
      WriteTables(a, op->mutable_magnitudes());
      return WriteStyle(a.style, op);
    }
    case Kind::kAutoAugment: {
      auto* op = spec->add_pipeline()->mutable_auto_augment();
      op->set_policy(
          a.policy == Policy::kCifar10 ? v1::AUTO_AUGMENT_POLICY_CIFAR10
          : a.policy == Policy::kSvhn  ? v1::AUTO_AUGMENT_POLICY_SVHN
                                       : v1::AUTO_AUGMENT_POLICY_IMAGENET);
      WriteTables(a, op->mutable_magnitudes());
      return WriteStyle(a.style, op);
    }
    case Kind::kAugMix: {
      auto* op = spec->add_pipeline()->mutable_aug_mix();
      op->set_severity(a.severity);
      op->set_mixture_width(a.mixture_width);
      op->set_chain_depth(a.chain_depth);
      op->set_alpha(float(a.alpha));
      op->set_all_ops(a.all_ops);
      WriteTables(a, op->mutable_magnitudes());
      op->set_interpolation(ToWire(a.style.interpolation));
      if (a.has_fill) {
        for (uint8_t v : a.style.fill) op->add_fill(v);
      }
      return;
    }
  }
}

void ErasingToProto(const ErasingSpec& r, v1::JobSpec* spec) {
  if (!r.enabled) return;
  auto* op = spec->add_pipeline()->mutable_random_erasing();
  op->set_p(r.p);
  op->set_scale_min(r.scale_min);
  op->set_scale_max(r.scale_max);
  op->set_ratio_min(r.ratio_min);
  op->set_ratio_max(r.ratio_max);
  op->set_random_value(r.random_value);
  if (!r.random_value) {
    for (float v : r.value) op->add_value(v);
  }
}

}  // namespace stoker
