#include "daemon/os/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

// The pid the lock's holder wrote into the file: it writes it just after
// taking the lock, so a holder that has only just won is given a moment.
// Empty if none appears (or the file holds no number).
std::string HolderPid(int fd) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    char text[24] = {0};
    const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
    std::string pid(text, n > 0 ? n : 0);
    if (!pid.empty() &&
        pid.find_first_not_of("0123456789") == std::string::npos) {
      return pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

absl::StatusOr<InstanceLock> InstanceLock::Acquire(
    const std::string& socket_path) {
  const std::string path = socket_path + ".lock";
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot open lock file ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = err == EWOULDBLOCK ? HolderPid(fd.get()) : "";
    if (err == EWOULDBLOCK && holder.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("another stokerd is starting on ", socket_path,
                       " at this moment; refusing to take it over"));
    }
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("another stokerd (pid ", holder, ") is already serving ",
                       socket_path, "; refusing to take it over"));
    }
    return absl::InternalError(
        absl::StrCat("flock ", path, ": ", std::strerror(err)));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd.get(), 0) == 0) {
    (void)!::pwrite(fd.get(), pid.data(), pid.size(), 0);
  }
  return InstanceLock(std::move(fd));
}

}  // namespace stoker
