// Pipeline ops <-> their wire messages.
#ifndef STOKER_CLIENT_SRC_OP_CONVERT_H_
#define STOKER_CLIENT_SRC_OP_CONVERT_H_

#include <optional>

#include "stoker/ops.h"
#include "stoker/v1/loader.pb.h"

namespace stoker::internal {

// The wire's values of the SDK's enums, in the enums' order.
inline constexpr v1::PaddingMode kModes[] = {
    v1::PADDING_MODE_CONSTANT, v1::PADDING_MODE_EDGE, v1::PADDING_MODE_REFLECT,
    v1::PADDING_MODE_SYMMETRIC};
inline constexpr v1::AutoAugmentPolicy kPolicies[] = {
    v1::AUTO_AUGMENT_POLICY_IMAGENET, v1::AUTO_AUGMENT_POLICY_CIFAR10,
    v1::AUTO_AUGMENT_POLICY_SVHN};

void OpToProto(const Op& op, v1::Op* out);
// nullopt for an op this SDK does not know (a newer daemon's).
std::optional<Op> OpFromProto(const v1::Op& op);

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_OP_CONVERT_H_
