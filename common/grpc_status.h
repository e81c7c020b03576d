// The one edge between absl::Status (used everywhere inside stoker) and
// grpc::Status (on the wire). Both use the same canonical code numbers.
#ifndef STOKER_COMMON_GRPC_STATUS_H_
#define STOKER_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace stoker {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace stoker

#endif  // STOKER_COMMON_GRPC_STATUS_H_
