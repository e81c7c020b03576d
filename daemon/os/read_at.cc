#include "daemon/os/read_at.h"

#include <unistd.h>

#include <cerrno>

namespace stoker {

bool ReadAt(int fd, uint8_t* out, size_t n, uint64_t offset) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) errno = 0;
    if (got <= 0) return false;
    out += got;
    n -= size_t(got);
    offset += uint64_t(got);
  }
  return true;
}

}  // namespace stoker
