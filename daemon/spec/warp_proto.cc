// RandomRotation and RandomAffine in a JobSpec: validation and back.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {
namespace {

// A [min, max] range within [-bound, bound] (or [lo, hi] when given).
absl::Status ParseRange(const OpError& e, const char* name, double min,
                        double max, double lo, double hi) {
  if (std::isfinite(min) && std::isfinite(max) && lo <= min && min <= max &&
      max <= hi) {
    return absl::OkStatus();
  }
  return e.Bad(
      name, absl::StrCat("range [", min, ", ", max,
                         "] must be ordered and within [", lo, ", ", hi, "]"));
}

template <typename OpProto>
void WriteWarpStyle(const AugmentStyle& style, OpProto* op) {
  op->set_interpolation(ToWire(style.interpolation));
  for (uint8_t v : style.fill) op->add_fill(v);
}

}  // namespace

absl::Status ParseRotation(const OpError& e, const v1::RandomRotation& op,
                           Pipeline* p) {
  WarpSpec& w = p->warp;
  w.kind = WarpSpec::Kind::kRotation;
  w.degrees_min = op.degrees_min();
  w.degrees_max = op.degrees_max();
  if (auto s = ParseRange(e, "degrees_min", w.degrees_min, w.degrees_max, -3600,
                          3600);
      !s.ok()) {
    return s;
  }
  if (auto s = ParseProbability(e, op.has_p(), op.p(), 1.0, &w.p); !s.ok()) {
    return s;
  }
  return ParseAugmentStyle(e, op, &w.style);
}

absl::Status ParseAffine(const OpError& e, const v1::RandomAffine& op,
                         Pipeline* p) {
  WarpSpec& w = p->warp;
  w.kind = WarpSpec::Kind::kAffine;
  w.degrees_min = op.degrees_min();
  w.degrees_max = op.degrees_max();
  absl::Status s =
      ParseRange(e, "degrees_min", w.degrees_min, w.degrees_max, -3600, 3600);
  w.translate = op.has_translate_x() || op.has_translate_y();
  w.translate_x = op.translate_x();
  w.translate_y = op.translate_y();
  if (s.ok() && w.translate) {
    s = ParseRange(e, "translate_x", 0, w.translate_x, 0, 1);
    if (s.ok()) s = ParseRange(e, "translate_y", 0, w.translate_y, 0, 1);
  }
  w.scale = op.has_scale_min() || op.has_scale_max();
  w.scale_min = op.has_scale_min() ? op.scale_min() : 1.0;
  w.scale_max = op.has_scale_max() ? op.scale_max() : 1.0;
  if (s.ok() && w.scale) {
    s = ParseRange(e, "scale_min", w.scale_min, w.scale_max, 0.01, 100);
  }
  // Shear below 80 degrees: tan() stays finite and coordinates bounded.
  w.shear_x = op.has_shear_x_min() || op.has_shear_x_max();
  w.shear_x_min = op.shear_x_min();
  w.shear_x_max = op.shear_x_max();
  if (s.ok() && w.shear_x) {
    s = ParseRange(e, "shear_x_min", w.shear_x_min, w.shear_x_max, -80, 80);
  }
  w.shear_y = op.has_shear_y_min() || op.has_shear_y_max();
  w.shear_y_min = op.shear_y_min();
  w.shear_y_max = op.shear_y_max();
  if (s.ok() && w.shear_y) {
    s = ParseRange(e, "shear_y_min", w.shear_y_min, w.shear_y_max, -80, 80);
  }
  if (!s.ok()) return s;
  if (auto s = ParseProbability(e, op.has_p(), op.p(), 1.0, &w.p); !s.ok()) {
    return s;
  }
  return ParseAugmentStyle(e, op, &w.style);
}

void WarpToProto(const WarpSpec& w, v1::JobSpec* spec) {
  if (w.kind == WarpSpec::Kind::kRotation) {
    auto* op = spec->add_pipeline()->mutable_random_rotation();
    op->set_degrees_min(w.degrees_min);
    op->set_degrees_max(w.degrees_max);
    WriteWarpStyle(w.style, op);
    if (w.p < 1) op->set_p(float(w.p));
  } else if (w.kind == WarpSpec::Kind::kAffine) {
    auto* op = spec->add_pipeline()->mutable_random_affine();
    op->set_degrees_min(w.degrees_min);
    op->set_degrees_max(w.degrees_max);
    if (w.translate) {
      op->set_translate_x(w.translate_x);
      op->set_translate_y(w.translate_y);
    }
    if (w.scale) {
      op->set_scale_min(w.scale_min);
      op->set_scale_max(w.scale_max);
    }
    if (w.shear_x) {
      op->set_shear_x_min(w.shear_x_min);
      op->set_shear_x_max(w.shear_x_max);
    }
    if (w.shear_y) {
      op->set_shear_y_min(w.shear_y_min);
      op->set_shear_y_max(w.shear_y_max);
    }
    WriteWarpStyle(w.style, op);
    if (w.p < 1) op->set_p(float(w.p));
  }
}

}  // namespace stoker
