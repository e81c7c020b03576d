// One message, optionally carrying a file descriptor (SCM_RIGHTS), over a
// connected Unix stream socket: how stokerd hands a client a read-only
// descriptor of a job's ring.
//
// Ring socket protocol: the client sends the job id, optionally a space and
// the lease token of its Attached reply, and '\n'; the daemon answers "0 OK"
// with the ring's descriptor attached (and, with a token, the consumer's
// lease table after it), or "<status code> <message>" without any, and
// closes the connection.
#ifndef STOKER_COMMON_FD_PASSING_H_
#define STOKER_COMMON_FD_PASSING_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace stoker {

// Longest message either side sends.
inline constexpr size_t kMaxFdMessageBytes = 1024;

// Most descriptors one message carries.
inline constexpr size_t kMaxPassedFds = 2;

// Sends `text` and duplicates of `fds` (at most kMaxPassedFds).
absl::Status SendWithFds(int socket, std::string_view text,
                         std::span<const int> fds);
// Sends `text` and, if `fd` >= 0, a duplicate of `fd`.
absl::Status SendWithFd(int socket, std::string_view text, int fd);

// Receives one message and the descriptors that came with it.
absl::Status ReceiveWithFds(int socket, std::string* text,
                            std::vector<UniqueFd>* fds);

// A status as "<code> <message>" and back.
std::string EncodeStatus(const absl::Status& status);
absl::Status DecodeStatus(std::string_view text);

}  // namespace stoker

#endif  // STOKER_COMMON_FD_PASSING_H_
