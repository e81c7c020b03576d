// The one edge between absl::Status (used everywhere inside stoker) and
// grpc::Status (on the wire). Both use the same canonical code numbers.
#ifndef STOKER_COMMON_GRPC_STATUS_H_
#define STOKER_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace stoker {

// The message escaped (SafeText) and, past kMaxStatusMessageBytes, cut in
// the middle (its head and its tail kept around a note of how much went):
// it travels in gRPC's trailing metadata, which a client refuses whole
// beyond 8 KiB, so a long path in an error would otherwise turn the refusal
// into "metadata size exceeds limit" and lose what it said.
inline constexpr size_t kMaxStatusMessageBytes = 2048;
grpc::Status ToGrpcStatus(const absl::Status& status);

// `text` kept whole up to `max_bytes`, else its head and tail with
// "...[N bytes cut]..." between them, cut on UTF-8 character boundaries.
std::string CutInTheMiddle(std::string_view text, size_t max_bytes);
absl::Status FromGrpcStatus(const grpc::Status& status);

// In a RESOURCE_EXHAUSTED refusal of a unary call because its user has too
// many answers it has not read yet (daemon/api/answers.h): the SDK tries
// such a call again for a few seconds (its user's other calls in flight
// are read meanwhile).
inline constexpr char kUnreadAnswers[] = "answers it has not read yet";

}  // namespace stoker

#endif  // STOKER_COMMON_GRPC_STATUS_H_
