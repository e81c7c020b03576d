// The wire form of a pipeline's automatic augmentation (TrivialAugmentWide,
// RandAugment, AutoAugment) and RandomErasing: validation into the
// Pipeline, and back.
#ifndef STOKER_DAEMON_SPEC_AUGMENT_PROTO_H_
#define STOKER_DAEMON_SPEC_AUGMENT_PROTO_H_

#include "absl/status/status.h"
#include "daemon/image/pipeline.h"
#include "daemon/spec/op_error.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// interpolation (unset: nearest) and fill of an augmentation op.
template <typename OpProto>
absl::Status ParseAugmentStyle(const OpError& e, const OpProto& op,
                               AugmentStyle* style) {
  style->interpolation = Interpolation::kNearest;
  if (op.has_interpolation()) {
    auto interpolation = ParseInterpolation(e, op.interpolation());
    if (!interpolation.ok()) return interpolation.status();
    if (*interpolation == Interpolation::kBicubic) {
      return e.Bad("interpolation", "must be NEAREST or BILINEAR");
    }
    style->interpolation = *interpolation;
  }
  const int n = op.fill_size();
  if (n != 0 && n != 1 && n != 3) {
    return e.Bad("fill", absl::StrCat("needs 0, 1 or 3 values, got ", n));
  }
  for (int c = 0; c < 3; ++c) {
    const uint32_t v = n == 0 ? 0 : op.fill(n == 1 ? 0 : c);
    if (v > 255) {
      return e.Bad("fill", absl::StrCat("values must be in [0, 255], got ", v));
    }
    style->fill[c] = uint8_t(v);
  }
  return absl::OkStatus();
}

absl::Status ParseTrivialAugment(const OpError& e,
                                 const v1::TrivialAugmentWide& op, Pipeline* p);
absl::Status ParseRandAugment(const OpError& e, const v1::RandAugment& op,
                              Pipeline* p);
absl::Status ParseAutoAugment(const OpError& e, const v1::AutoAugment& op,
                              Pipeline* p);
absl::Status ParseErasing(const OpError& e, const v1::RandomErasing& op,
                          Pipeline* p);

absl::Status ParseRotation(const OpError& e, const v1::RandomRotation& op,
                           Pipeline* p);
absl::Status ParseAffine(const OpError& e, const v1::RandomAffine& op,
                         Pipeline* p);
// Appends the warp's op (if any) to spec's pipeline.
void WarpToProto(const WarpSpec& warp, v1::JobSpec* spec);

// Appends the augmentation's op (if any) to spec's pipeline.
void AugmentToProto(const AutoAugmentSpec& augment, v1::JobSpec* spec);
// Appends the erasing op (if any).
void ErasingToProto(const ErasingSpec& erasing, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_AUGMENT_PROTO_H_
