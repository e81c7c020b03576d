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

absl::Status ParseTrivialAugment(const OpError& e,
                                 const v1::TrivialAugmentWide& op, Pipeline* p);
absl::Status ParseRandAugment(const OpError& e, const v1::RandAugment& op,
                              Pipeline* p);
absl::Status ParseAutoAugment(const OpError& e, const v1::AutoAugment& op,
                              Pipeline* p);
absl::Status ParseErasing(const OpError& e, const v1::RandomErasing& op,
                          Pipeline* p);

// Appends the augmentation's op (if any) to spec's pipeline.
void AugmentToProto(const AutoAugmentSpec& augment, v1::JobSpec* spec);
// Appends the erasing op (if any).
void ErasingToProto(const ErasingSpec& erasing, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_AUGMENT_PROTO_H_
