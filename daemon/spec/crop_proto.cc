// Pad and RandomCrop in a JobSpec: validation and back.
#include "absl/strings/str_cat.h"
#include "daemon/spec/ops_proto.h"

namespace stoker {
namespace {

absl::Status ParseMode(const OpError& e, v1::PaddingMode mode, PadMode* out) {
  switch (mode) {
    case v1::PADDING_MODE_UNSPECIFIED:
    case v1::PADDING_MODE_CONSTANT:
      *out = PadMode::kConstant;
      return absl::OkStatus();
    case v1::PADDING_MODE_EDGE:
      *out = PadMode::kEdge;
      return absl::OkStatus();
    case v1::PADDING_MODE_REFLECT:
      *out = PadMode::kReflect;
      return absl::OkStatus();
    case v1::PADDING_MODE_SYMMETRIC:
      *out = PadMode::kSymmetric;
      return absl::OkStatus();
    default:
      return e.Bad("padding_mode", absl::StrCat("has unknown value ", mode));
  }
}

v1::PaddingMode ModeToWire(PadMode mode) {
  switch (mode) {
    case PadMode::kEdge:
      return v1::PADDING_MODE_EDGE;
    case PadMode::kReflect:
      return v1::PADDING_MODE_REFLECT;
    case PadMode::kSymmetric:
      return v1::PADDING_MODE_SYMMETRIC;
    default:
      return v1::PADDING_MODE_CONSTANT;
  }
}

// The four sides, each at most kMaxSide (the padded image is materialised
// only where the crop reads it, but its index maps are whole).
absl::Status ParseSides(const OpError& e, const char* prefix, uint32_t left,
                        uint32_t top, uint32_t right, uint32_t bottom,
                        PadSpec* pad) {
  const uint32_t sides[4] = {left, top, right, bottom};
  const char* names[4] = {"left", "top", "right", "bottom"};
  for (int i = 0; i < 4; ++i) {
    if (sides[i] > kMaxSide) {
      return e.Bad(
          absl::StrCat(prefix, names[i]),
          absl::StrCat("must be at most ", kMaxSide, ", got ", sides[i]));
    }
  }
  pad->left = int(left);
  pad->top = int(top);
  pad->right = int(right);
  pad->bottom = int(bottom);
  return absl::OkStatus();
}

}  // namespace

absl::Status ParsePad(const OpError& e, const v1::Pad& op, Pipeline* p) {
  PadSpec& pad = p->crop.pad;
  if (auto s =
          ParseSides(e, "", op.left(), op.top(), op.right(), op.bottom(), &pad);
      !s.ok()) {
    return s;
  }
  if (auto s = ParseFill(e, op.fill(), &pad.fill); !s.ok()) return s;
  return ParseMode(e, op.padding_mode(), &pad.mode);
}

absl::Status ParseRandomCrop(const OpError& e, const v1::RandomCrop& op,
                             Pipeline* p) {
  if (auto s = e.Side("height", op.height()); !s.ok()) return s;
  if (auto s = e.Side("width", op.width()); !s.ok()) return s;
  RandomCropSpec& crop = p->crop;
  if (auto s = ParseSides(e, "pad_", op.pad_left(), op.pad_top(),
                          op.pad_right(), op.pad_bottom(), &crop.padding);
      !s.ok()) {
    return s;
  }
  if (auto s = ParseFill(e, op.fill(), &crop.padding.fill); !s.ok()) return s;
  if (auto s = ParseMode(e, op.padding_mode(), &crop.padding.mode); !s.ok()) {
    return s;
  }
  crop.pad_if_needed = op.pad_if_needed();
  crop.pad_end = op.pad_end();
  crop.after_flip = op.after_flip();
  if (crop.pad_end && !crop.pad_if_needed) {
    return e.Bad("pad_end", "applies to pad_if_needed's padding");
  }
  // Mirrored for a flipped sample: only pad_end's padding is.
  if (crop.after_flip &&
      (!crop.pad_end || crop.padding.any() || crop.pad.any())) {
    return e.Bad("after_flip",
                 "applies to pad_end's padding alone (no pad op, no pad_left, "
                 "pad_top, pad_right or pad_bottom)");
  }
  crop.enabled = true;
  p->geometry = Pipeline::Geometry::kRandomCrop;
  p->output = {int(op.width()), int(op.height())};
  return absl::OkStatus();
}

void CropToProto(const RandomCropSpec& crop, ImageSize output,
                 v1::JobSpec* spec) {
  if (crop.pad.any()) {
    auto* pad = spec->add_pipeline()->mutable_pad();
    pad->set_left(crop.pad.left);
    pad->set_top(crop.pad.top);
    pad->set_right(crop.pad.right);
    pad->set_bottom(crop.pad.bottom);
    for (uint8_t v : crop.pad.fill) pad->add_fill(v);
    pad->set_padding_mode(ModeToWire(crop.pad.mode));
  }
  auto* op = spec->add_pipeline()->mutable_random_crop();
  op->set_height(output.height);
  op->set_width(output.width);
  op->set_pad_left(crop.padding.left);
  op->set_pad_top(crop.padding.top);
  op->set_pad_right(crop.padding.right);
  op->set_pad_bottom(crop.padding.bottom);
  op->set_pad_if_needed(crop.pad_if_needed);
  op->set_pad_end(crop.pad_end);
  op->set_after_flip(crop.after_flip);
  for (uint8_t v : crop.padding.fill) op->add_fill(v);
  op->set_padding_mode(ModeToWire(crop.padding.mode));
}

}  // namespace stoker
