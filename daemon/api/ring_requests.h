// The ring socket's one request: "give me a read-only descriptor of job X's
// ring". Access is decided by the connecting process's credentials, as for
// the gRPC calls; the descriptor is opened O_RDONLY, so the client can map
// the ring only for reading (mmap with PROT_WRITE fails) and cannot change
// its size or mode. Protocol: common/fd_passing.h.
#ifndef STOKER_DAEMON_API_RING_REQUESTS_H_
#define STOKER_DAEMON_API_RING_REQUESTS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/api/peer.h"
#include "daemon/jobs/job_registry.h"

namespace stoker {

// The job id in what a ring connection has sent so far: nullopt until the
// newline has arrived; INVALID_ARGUMENT once it is too long to be one.
absl::StatusOr<std::optional<std::string>> ParseRingRequest(
    std::string_view received);

// Answers connected socket `fd` (non-blocking; the answer is one small
// message, which a fresh socket's buffer holds): the ring of job `id`, or
// why not. Never throws; logs refusals at debug.
void AnswerRingRequest(int fd, const PeerCredentials& credentials,
                       const absl::StatusOr<std::string>& id,
                       const JobRegistry& registry);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_RING_REQUESTS_H_
