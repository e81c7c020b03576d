// Names that stokerd and its clients derive the same way.
#ifndef STOKER_COMMON_NAMING_H_
#define STOKER_COMMON_NAMING_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace stoker {

// Request metadata with which the SDK names its client (process) to the
// daemon, for per-client limits and stats.
inline constexpr char kClientMetadataKey[] = "stoker-client";

inline constexpr std::string_view kDaemonDefaultTarget =
    "unix:///run/stoker/stoker.sock";

// The one spelling of a socket address that every program accepts: a plain
// path ("/run/stoker/stoker.sock", "x/stoker.sock"), "unix:PATH" or
// "unix://PATH", a relative PATH taken from the current directory. Returns
// gRPC's form for it, "unix:///absolute/path". INVALID_ARGUMENT for anything
// that is not a Unix socket (a host:port, "dns:...") or an empty path.
absl::StatusOr<std::string> NormalizeSocketTarget(std::string_view target);

// "unix:///run/x.sock" or "unix:/run/x.sock" -> "/run/x.sock"; a plain path is
// returned as is; anything else (e.g. "dns:host:1") -> "".
std::string SocketPathFromTarget(std::string_view target);

// The shared-memory name prefix of the daemon serving `socket_path`:
// "stoker-<16 hex digits>-". Every segment a daemon creates starts with it, so
// a daemon restarted on the same socket finds and removes its predecessor's
// leftovers, and daemons on different sockets never touch each other's.
std::string SegmentPrefix(std::string_view socket_path);

// The ring socket beside the gRPC socket: "<socket_path>.ring". A client
// asks it for a job's shared memory and receives a read-only descriptor.
std::string RingSocketPath(std::string_view socket_path);

}  // namespace stoker

#endif  // STOKER_COMMON_NAMING_H_
