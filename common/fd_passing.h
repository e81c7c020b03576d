// One message, optionally carrying a file descriptor (SCM_RIGHTS), over a
// connected Unix stream socket: how stokerd hands a client a read-only
// descriptor of a job's ring.
//
// Ring socket protocol: the client sends the job id and '\n'; the daemon
// answers "0 OK" with the descriptor attached, or "<status code> <message>"
// without one, and closes the connection.
#ifndef STOKER_COMMON_FD_PASSING_H_
#define STOKER_COMMON_FD_PASSING_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace stoker {

// Longest message either side sends.
inline constexpr size_t kMaxFdMessageBytes = 1024;

// Sends `text` and, if `fd` >= 0, a duplicate of `fd`.
absl::Status SendWithFd(int socket, std::string_view text, int fd);

// Receives one message; *fd holds a descriptor if one came with it (else
// none).
absl::Status ReceiveWithFd(int socket, std::string* text, UniqueFd* fd);

// A status as "<code> <message>" and back.
std::string EncodeStatus(const absl::Status& status);
absl::Status DecodeStatus(std::string_view text);

}  // namespace stoker

#endif  // STOKER_COMMON_FD_PASSING_H_
