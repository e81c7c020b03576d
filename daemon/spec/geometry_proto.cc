// The geometry ops of a JobSpec (random_resized_crop; resize
// [center_crop]; [resize] [pad] random_crop): validation and back.
#include "absl/strings/str_cat.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {
namespace {

void ResizeToProto(const Pipeline& p, v1::JobSpec* spec) {
  auto* op = spec->add_pipeline()->mutable_resize();
  if (p.shorter_side > 0) {
    op->set_shorter_side(p.shorter_side);
    op->set_shorter_side_max(p.shorter_side_max);
  } else {
    op->set_height(p.resized.height);
    op->set_width(p.resized.width);
  }
  op->set_interpolation(ToWire(p.interpolation));
}

}  // namespace

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
    if (op.shorter_side_max() != 0) {
      if (auto s = e.Side("shorter_side_max", op.shorter_side_max()); !s.ok()) {
        return s;
      }
      if (op.shorter_side_max() < op.shorter_side()) {
        return e.Bad("shorter_side_max", "must be at least shorter_side");
      }
      p->shorter_side_max = int(op.shorter_side_max());
    }
  } else if (op.shorter_side_max() != 0) {
    return e.Bad("shorter_side_max", "needs shorter_side (RandomResize)");
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

// The geometry ops: a random resized crop, a resize and its centre crop,
// or [a resize] [a pad] and a random crop.
void GeometryToProto(const Pipeline& p, v1::JobSpec* spec) {
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

}  // namespace stoker
