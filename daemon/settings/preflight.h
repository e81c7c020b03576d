// Preflight: what stokerd checks of its settings against the machine before
// it starts, and what `stokerd --check_config` and a reload check too, so
// that a configuration said to be valid also starts.
#ifndef STOKER_DAEMON_SETTINGS_PREFLIGHT_H_
#define STOKER_DAEMON_SETTINGS_PREFLIGHT_H_

#include <string>

#include "absl/status/status.h"
#include "daemon/settings/options.h"

namespace stoker {

// The most decode threads per core stokerd accepts: more only adds memory
// and context switches.
inline constexpr int kMaxWorkersPerCore = 4;

// Checks `options` against this machine: every dataset root exists and is a
// directory; the socket group exists; the shared-memory budget fits in
// `shm_dir` (/dev/shm); the workers fit the cores; nothing but a socket sits
// at the socket paths (unless systemd passed the sockets). INVALID_ARGUMENT
// naming the setting and the cause. It cannot see what only binding shows
// (another stokerd on the socket, a busy metrics port): start reports those.
absl::Status CheckAgainstMachine(const DaemonOptions& options,
                                 const std::string& shm_dir = "/dev/shm");

}  // namespace stoker

#endif  // STOKER_DAEMON_SETTINGS_PREFLIGHT_H_
