// pread until done: the one loop every reader of file bytes shares.
#ifndef STOKER_DAEMON_OS_READ_AT_H_
#define STOKER_DAEMON_OS_READ_AT_H_

#include <cstddef>
#include <cstdint>

namespace stoker {

// Reads exactly n bytes at `offset` of `fd` (retrying short reads and
// EINTR). False on an error (errno says which) or at the end of the file
// (errno is 0).
bool ReadAt(int fd, uint8_t* out, size_t n, uint64_t offset);

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_READ_AT_H_
