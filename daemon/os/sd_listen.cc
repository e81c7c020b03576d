#include "daemon/os/sd_listen.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START

absl::StatusOr<std::string> BoundPath(int fd) {
  int type = 0;
  int listening = 0;
  socklen_t length = sizeof(type);
  sockaddr_un address{};
  socklen_t address_length = sizeof(address);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0 ||
      (length = sizeof(listening),
       ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address),
                    &address_length) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "descriptor ", fd, " from socket activation: ", std::strerror(errno)));
  }
  if (address.sun_family != AF_UNIX || type != SOCK_STREAM || !listening ||
      address_length <= offsetof(sockaddr_un, sun_path) ||
      address.sun_path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "descriptor ", fd,
        " from socket activation is not a listening Unix stream socket bound "
        "to a path (the socket unit needs ListenStream=/path)"));
  }
  return std::string(address.sun_path,
                     strnlen(address.sun_path,
                             address_length - offsetof(sockaddr_un, sun_path)));
}

}  // namespace

absl::StatusOr<std::map<std::string, int>> TakeListenFds() {
  std::map<std::string, int> sockets;
  const char* pid_text = std::getenv("LISTEN_PID");
  const char* count_text = std::getenv("LISTEN_FDS");
  int pid = 0;
  int count = 0;
  const bool ours = pid_text != nullptr && absl::SimpleAtoi(pid_text, &pid) &&
                    pid == ::getpid();
  const bool counted = count_text != nullptr &&
                       absl::SimpleAtoi(count_text, &count) && count > 0 &&
                       count <= 64;
  const std::string count_copy = count_text != nullptr ? count_text : "";
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!ours) return sockets;
  if (!counted) {
    // Activation was meant for this process but passed nothing usable:
    // listening on sockets of our own instead would hide the unit's error.
    return absl::InvalidArgumentError(absl::StrCat(
        "socket activation: LISTEN_PID is this process but LISTEN_FDS is '",
        count_copy, "', not a count of passed sockets"));
  }
  for (int fd = kFirstFd; fd < kFirstFd + count; ++fd) {
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    auto path = BoundPath(fd);
    if (!path.ok()) return path.status();
    sockets[*path] = fd;
  }
  return sockets;
}

}  // namespace stoker
