#include "daemon/datasets/sample_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon/os/read_at.h"

namespace stoker {
namespace {

// Why a sample file could not be opened, with the code that says whose
// problem it is.
absl::Status OpenError(int err) {
  const std::string text = absl::StrCat("cannot open: ", std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(text);
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::ResourceExhaustedError(
          absl::StrCat(text, " (stokerd itself is short of it)"));
    default:
      return absl::NotFoundError(text);
  }
}

}  // namespace

absl::StatusOr<UniqueFd> OpenSample(const std::string& path,
                                    const PathPolicy* policy, struct stat* st) {
  // Look before opening for reading: an O_PATH descriptor opens nothing (a
  // FIFO would block open(); a device could act on being opened), and the
  // file it names is the one checked, then opened through /proc.
  const UniqueFd where(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!where) return OpenError(errno);
  if (policy != nullptr) {
    if (absl::Status allowed = policy->CheckOpen(where.get()); !allowed.ok()) {
      return allowed;
    }
  }
  if (::fstat(where.get(), st) != 0 || !S_ISREG(st->st_mode)) {
    return absl::InvalidArgumentError("not a regular file");
  }
  char reopen[64];
  std::snprintf(reopen, sizeof(reopen), "/proc/self/fd/%d", where.get());
  UniqueFd fd(::open(reopen, O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return OpenError(errno);
  return fd;
}

absl::Status ReadFile(const std::string& path, std::vector<uint8_t>* buffer,
                      const PathPolicy* policy) {
  struct stat st;
  absl::StatusOr<UniqueFd> opened = OpenSample(path, policy, &st);
  if (!opened.ok()) return opened.status();
  const UniqueFd& fd = *opened;
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file is ", st.st_size, " bytes, above the limit of ", kMaxFileBytes));
  }
  buffer->resize(static_cast<size_t>(st.st_size));
  return ReadBytes(fd.get(), 0, buffer);
}

absl::Status ReadBytes(int fd, uint64_t offset, std::vector<uint8_t>* buffer) {
  if (ReadAt(fd, buffer->data(), buffer->size(), offset)) {
    return absl::OkStatus();
  }
  const int err = errno;
  return absl::DataLossError(
      err ? absl::StrCat("read failed: ", std::strerror(err))
          : "file shrank while being read");
}

}  // namespace stoker
