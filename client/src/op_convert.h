// Pipeline ops <-> their wire messages.
#ifndef STOKER_CLIENT_SRC_OP_CONVERT_H_
#define STOKER_CLIENT_SRC_OP_CONVERT_H_

#include <optional>

#include "stoker/ops.h"
#include "stoker/v1/loader.pb.h"

namespace stoker::internal {

void OpToProto(const Op& op, v1::Op* out);
// nullopt for an op this SDK does not know (a newer daemon's).
std::optional<Op> OpFromProto(const v1::Op& op);

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_OP_CONVERT_H_
