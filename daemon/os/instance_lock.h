// InstanceLock: proof that this process is the one stokerd serving a socket.
//
// An exclusive flock(2) on "<socket>.lock". The kernel drops it when the
// holder dies, even by SIGKILL, so a crashed daemon never blocks its
// successor, while a live one is never robbed of its socket: a second daemon
// fails to take the lock and refuses to start. Only the holder may unlink a
// stale socket file or its predecessor's segments.
#ifndef STOKER_DAEMON_OS_INSTANCE_LOCK_H_
#define STOKER_DAEMON_OS_INSTANCE_LOCK_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace stoker {

class InstanceLock {
 public:
  // FAILED_PRECONDITION when another live process holds the lock.
  static absl::StatusOr<InstanceLock> Acquire(const std::string& socket_path);

  InstanceLock(InstanceLock&& other) noexcept = default;
  InstanceLock& operator=(InstanceLock&&) = delete;

 private:
  explicit InstanceLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;  // closing it drops the lock
};

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_INSTANCE_LOCK_H_
