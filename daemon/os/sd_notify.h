// The systemd notification protocol (sd_notify(3)), without libsystemd: one
// datagram per message to the socket named by $NOTIFY_SOCKET.
//
// stokerd sends READY=1 once its sockets listen, WATCHDOG=1 at half the
// interval systemd asks for ($WATCHDOG_USEC) while its locks answer, and
// STOPPING=1 when it starts to drain. Without $NOTIFY_SOCKET nothing is
// sent.
//
// Thread-safety: thread-safe (each call opens its own socket).
#ifndef STOKER_DAEMON_OS_SD_NOTIFY_H_
#define STOKER_DAEMON_OS_SD_NOTIFY_H_

#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace stoker {

// Sends `state` ("READY=1", "STATUS=...", several joined by newlines).
// OK without doing anything if $NOTIFY_SOCKET is unset.
absl::Status SdNotify(std::string_view state);

// How often to send WATCHDOG=1: half of $WATCHDOG_USEC, if it is set and
// meant for this process ($WATCHDOG_PID unset or ours).
std::optional<absl::Duration> WatchdogInterval();

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_SD_NOTIFY_H_
