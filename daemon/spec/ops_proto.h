// The wire form of a pipeline's ops, one parser per op: validation into the
// Pipeline (errors name the op and field), and back. pipeline_proto.cc
// checks their order and calls these.
#ifndef STOKER_DAEMON_SPEC_OPS_PROTO_H_
#define STOKER_DAEMON_SPEC_OPS_PROTO_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "daemon/image/pipeline.h"
#include "daemon/spec/op_error.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// A fill: none (0), one value for all three channels, or three, each in
// [0, 255].
inline absl::Status ParseFill(
    const OpError& e, const google::protobuf::RepeatedField<uint32_t>& fill,
    std::array<uint8_t, 3>* out) {
  const int n = fill.size();
  if (n != 0 && n != 1 && n != 3) {
    return e.Bad("fill", absl::StrCat("needs 0, 1 or 3 values, got ", n));
  }
  for (int c = 0; c < 3; ++c) {
    const uint32_t v = n == 0 ? 0 : fill.Get(n == 1 ? 0 : c);
    if (v > 255) {
      return e.Bad("fill", absl::StrCat("values must be in [0, 255], got ", v));
    }
    (*out)[c] = uint8_t(v);
  }
  return absl::OkStatus();
}

// interpolation (unset: nearest; bicubic too where `bicubic`: Pillow's
// affine filters) and fill of an augmentation op.
template <typename OpProto>
absl::Status ParseAugmentStyle(const OpError& e, const OpProto& op,
                               AugmentStyle* style, bool bicubic = true) {
  style->interpolation = Interpolation::kNearest;
  if (op.has_interpolation()) {
    auto interpolation = ParseInterpolation(e, op.interpolation());
    if (!interpolation.ok()) return interpolation.status();
    if (*interpolation == Interpolation::kBicubic && !bicubic) {
      return e.Bad("interpolation", "must be NEAREST or BILINEAR");
    }
    style->interpolation = *interpolation;
  }
  return ParseFill(e, op.fill(), &style->fill);
}

// Position of each op kind in the accepted order (-1: unknown).
int OpRank(v1::Op::KindCase kind);
inline constexpr int kFirstImageStage = 3;  // OpRank of a horizontal flip
// Parses one op into *p (pipeline_proto.cc).
absl::Status ParseOp(int i, const v1::Op& op, Pipeline* p);

// RandomChoice (choice_proto.cc), and the op of one image stage of `p`
// back to the wire (none if that stage is off).
absl::Status ParseChoice(int i, const v1::RandomChoice& op, Pipeline* p);
void StageToProto(const Pipeline& p, ImageStage stage, v1::JobSpec* spec);
void ChoiceToProto(const ChoiceSpec& choice, v1::JobSpec* spec);

// The geometry (geometry_proto.cc).
absl::Status ParseCrop(const OpError& e, const v1::RandomResizedCrop& op,
                       Pipeline* p);
absl::Status ParseResize(const OpError& e, const v1::Resize& op, Pipeline* p);
absl::Status ParseCenterCrop(const OpError& e, const v1::CenterCrop& op,
                             Pipeline* p);
// Whether op i of spec may stand where it is among the geometry ops.
bool GeometryFits(const v1::JobSpec& spec, int i);
// Appends the geometry ops of `p`.
void GeometryToProto(const Pipeline& p, v1::JobSpec* spec);

// GaussianBlur, Pillow's GaussianBlur and RandomSolarize (blur_proto.cc).
absl::Status ParsePillowBlur(const OpError& e, const v1::PillowGaussianBlur& op,
                             Pipeline* p);
absl::Status ParseSolarize(const OpError& e, const v1::RandomSolarize& op,
                           Pipeline* p);
void SolarizeToProto(const SolarizeSpec& s, v1::JobSpec* spec);

absl::Status ParseTrivialAugment(const OpError& e,
                                 const v1::TrivialAugmentWide& op, Pipeline* p);
absl::Status ParseRandAugment(const OpError& e, const v1::RandAugment& op,
                              Pipeline* p);
absl::Status ParseAutoAugment(const OpError& e, const v1::AutoAugment& op,
                              Pipeline* p);
absl::Status ParseAugMix(const OpError& e, const v1::AugMix& op, Pipeline* p);
absl::Status ParseErasing(const OpError& e, const v1::RandomErasing& op,
                          Pipeline* p);

absl::Status ParseRotation(const OpError& e, const v1::RandomRotation& op,
                           Pipeline* p);
absl::Status ParseAffine(const OpError& e, const v1::RandomAffine& op,
                         Pipeline* p);
absl::Status ParsePad(const OpError& e, const v1::Pad& op, Pipeline* p);
absl::Status ParseRandomCrop(const OpError& e, const v1::RandomCrop& op,
                             Pipeline* p);
absl::Status ParseBlur(const OpError& e, const v1::GaussianBlur& op,
                       Pipeline* p);
void BlurToProto(const BlurSpec& blur, v1::JobSpec* spec);

// Appends a kRandomCrop pipeline's pad (if any) and crop.
void CropToProto(const RandomCropSpec& crop, ImageSize output,
                 v1::JobSpec* spec);

// Appends the warp's op (if any) to spec's pipeline.
void WarpToProto(const WarpSpec& warp, v1::JobSpec* spec);

// Appends the augmentation's op (if any) to spec's pipeline.
void AugmentToProto(const AutoAugmentSpec& augment, v1::JobSpec* spec);
// Appends the erasing op (if any).
void ErasingToProto(const ErasingSpec& erasing, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_OPS_PROTO_H_
