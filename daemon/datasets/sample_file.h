// Reading a sample's bytes: opening a file of a dataset safely (a regular
// file inside the allowed roots, looked at before it is opened), reading it
// whole or a range of it (a tar shard's member), with a bound on its size.
// Decoders take the bytes (daemon/image/); this is the only place that
// opens a sample.
#ifndef STOKER_DAEMON_DATASETS_SAMPLE_FILE_H_
#define STOKER_DAEMON_DATASETS_SAMPLE_FILE_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "daemon/os/path_policy.h"

namespace stoker {

// Largest file a worker reads; larger ones are refused as corrupt input.
inline constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;

// Opens `path` for reading if it is a regular file (after symlinks) inside
// `policy`'s roots (nullptr: anywhere), filling *st. It looks through an
// O_PATH descriptor first, which opens nothing: a FIFO or a device is
// refused without being opened. Errors say what was wrong, not which file.
absl::StatusOr<UniqueFd> OpenSample(const std::string& path,
                                    const PathPolicy* policy, struct stat* st);

// Reads the whole of `path` into *buffer (resized to the file's size),
// with the calling thread's file identity (a worker holds its job owner's:
// see HeldIdentity). Only a regular file is opened for reading. With a
// `policy`, a file that turns out to lie outside its roots (say, a symlink
// to /etc) is PERMISSION_DENIED. Over kMaxFileBytes is INVALID_ARGUMENT.
absl::Status ReadFile(const std::string& path, std::vector<uint8_t>* buffer,
                      const PathPolicy* policy = nullptr);

// Fills *buffer (its size is how many bytes) from `offset` of `fd`;
// DATA_LOSS when the file ends first or the read fails.
absl::Status ReadBytes(int fd, uint64_t offset, std::vector<uint8_t>* buffer);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SAMPLE_FILE_H_
