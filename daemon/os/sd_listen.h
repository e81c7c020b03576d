// Socket activation (sd_listen_fds(3)) without libsystemd: the listening
// sockets systemd opened for stokerd (deploy/stokerd.socket) and passed as
// descriptors 3, 4, ... with $LISTEN_PID and $LISTEN_FDS.
//
// Thread-safety: call once, before threads start (it edits the environment).
#ifndef STOKER_DAEMON_OS_SD_LISTEN_H_
#define STOKER_DAEMON_OS_SD_LISTEN_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace stoker {

// The passed sockets by the path each is bound to; empty if none were
// passed to this process. Unsets the variables (children must not take the
// sockets) and marks the descriptors close-on-exec. INVALID_ARGUMENT if a
// descriptor is not a listening Unix stream socket bound to a path.
absl::StatusOr<std::map<std::string, int>> TakeListenFds();

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_SD_LISTEN_H_
