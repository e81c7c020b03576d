#include "common/fd_passing.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace stoker {

absl::Status SendWithFds(int socket, std::string_view text,
                         std::span<const int> fds) {
  if (text.empty() || text.size() > kMaxFdMessageBytes ||
      fds.size() > kMaxPassedFds) {
    return absl::InvalidArgumentError("message length out of range");
  }
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  if (!fds.empty()) {
    message.msg_control = control;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t sent;
  do {
    sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(text.size())) {
    return absl::UnavailableError(
        absl::StrCat("sendmsg: ", sent < 0 ? std::strerror(errno) : "short"));
  }
  return absl::OkStatus();
}

absl::Status SendWithFd(int socket, std::string_view text, int fd) {
  if (fd < 0) return SendWithFds(socket, text, {});
  return SendWithFds(socket, text, std::span<const int>(&fd, 1));
}

absl::Status ReceiveWithFds(int socket, std::string* text,
                            std::vector<UniqueFd>* fds) {
  fds->clear();
  char buffer[kMaxFdMessageBytes];
  iovec iov{buffer, sizeof(buffer)};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t got;
  do {
    got = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    return absl::UnavailableError(
        absl::StrCat("recvmsg: ", std::strerror(errno)));
  }
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
      continue;
    }
    const size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      fds->emplace_back(received);  // owned, so closed on every path
    }
  }
  if (got == 0) {
    fds->clear();
    return absl::UnavailableError("the peer closed the connection");
  }
  text->assign(buffer, static_cast<size_t>(got));
  return absl::OkStatus();
}

std::string EncodeStatus(const absl::Status& status) {
  return absl::StrCat(static_cast<int>(status.code()), " ",
                      status.ok() ? "OK" : status.message());
}

absl::Status DecodeStatus(std::string_view text) {
  int code = -1;
  const auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), code);
  const char* const text_end = text.data() + text.size();
  if (error != std::errc() || code < 0 || code > 16 || end == text_end ||
      *end != ' ') {
    return absl::InternalError(absl::StrCat(
        "malformed reply from the ring socket: '", std::string(text), "'"));
  }
  text.remove_prefix(end - text.data() + 1);
  if (code == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(code), std::string(text));
}

}  // namespace stoker
