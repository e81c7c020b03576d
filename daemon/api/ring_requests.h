// The ring socket's one request: "give me a read-only descriptor of job X's
// ring". Access is decided by the connecting process's credentials, as for
// the gRPC calls; the descriptor is opened O_RDONLY, so the client can map
// the ring only for reading (mmap with PROT_WRITE fails) and cannot change
// its size or mode. Protocol: common/fd_passing.h.
#ifndef STOKER_DAEMON_API_RING_REQUESTS_H_
#define STOKER_DAEMON_API_RING_REQUESTS_H_

#include "daemon/api/peer.h"
#include "daemon/jobs/job_registry.h"

namespace stoker {

// Answers the request on connected socket `fd` (a client that does not send
// it within a second is dropped). Never throws; logs refusals at debug.
void ServeRingRequest(int fd, const PeerCredentials& credentials,
                      const JobRegistry& registry);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_RING_REQUESTS_H_
