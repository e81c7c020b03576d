// The ring socket's one request: "give me a read-only descriptor of job X's
// ring" (and, for the consumer that names its lease token, its lease table,
// read-write: common/lease_table.h). Access is decided by the connecting
// process's credentials, as for the gRPC calls; the descriptor is opened
// O_RDONLY, so the client can map the ring only for reading (mmap with
// PROT_WRITE fails) and cannot change its size or mode. Protocol:
// common/fd_passing.h.
#ifndef STOKER_DAEMON_API_RING_REQUESTS_H_
#define STOKER_DAEMON_API_RING_REQUESTS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "daemon/api/peer.h"
#include "daemon/jobs/job_registry.h"

namespace stoker {

struct RingQuery {
  std::string job_id;
  std::string lease_token;  // empty: the ring only
};

// The request in what a ring connection has sent so far: nullopt until the
// newline has arrived; INVALID_ARGUMENT once it is too long to be one.
absl::StatusOr<std::optional<RingQuery>> ParseRingRequest(
    std::string_view received);

// Answers connected socket `fd` (non-blocking; the answer is one small
// message, which a fresh socket's buffer holds): the ring of the job (and
// the consumer's lease table, with a token), or why not. Never throws; logs
// refusals at debug.
void AnswerRingRequest(int fd, const PeerCredentials& credentials,
                       const absl::StatusOr<RingQuery>& request,
                       const JobRegistry& registry);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_RING_REQUESTS_H_
