#include "daemon/os/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace stoker {

absl::Status SdNotify(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return absl::OkStatus();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t length = std::strlen(path);
  if ((path[0] != '/' && path[0] != '@') ||
      length >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("NOTIFY_SOCKET '", path, "' is not a usable socket"));
  }
  std::memcpy(address.sun_path, path, length);
  if (path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
  const UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  const ssize_t sent = ::sendto(
      fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
      reinterpret_cast<const sockaddr*>(&address),
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + length));
  const int err = errno;
  if (sent != static_cast<ssize_t>(state.size())) {
    return absl::UnavailableError(
        absl::StrCat("notifying ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

std::optional<absl::Duration> WatchdogInterval() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  uint64_t micros = 0;
  if (usec == nullptr || !absl::SimpleAtoi(usec, &micros) || micros == 0) {
    return std::nullopt;
  }
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid != nullptr) {
    int64_t owner = 0;
    if (!absl::SimpleAtoi(pid, &owner) || owner != ::getpid()) {
      return std::nullopt;
    }
  }
  return absl::Microseconds(micros) / 2;
}

}  // namespace stoker
