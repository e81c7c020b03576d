#include "daemon/shm/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "boost/interprocess/shared_memory_object.hpp"

namespace stoker {
namespace {

namespace bip = boost::interprocess;

absl::Status ReserveError(const std::string& name, uint64_t bytes, int err) {
  if (err == ENOSPC || err == ENOMEM || err == EFBIG) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot reserve ", bytes, " bytes of shared memory for '", name, "': ",
        std::strerror(err), " (is /dev/shm too small? see `df -h /dev/shm`)"));
  }
  return absl::InternalError(
      absl::StrCat("posix_fallocate on '", name, "': ", std::strerror(err)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedSegment>> SharedSegment::Create(
    std::string name, uint64_t bytes, mode_t mode) {
  try {
    bip::permissions permissions(mode);
    bip::shared_memory_object shm(bip::create_only, name.c_str(),
                                  bip::read_write, permissions);
    const int fd = shm.get_mapping_handle().handle;
    // shm_open applies the umask; set the bits we were asked for.
    if (::fchmod(fd, mode) != 0) {
      const int err = errno;
      bip::shared_memory_object::remove(name.c_str());
      return absl::InternalError(
          absl::StrCat("fchmod '", name, "': ", std::strerror(err)));
    }
    // Reserve every page now: a full /dev/shm fails here, not as a SIGBUS
    // in a worker halfway through a batch.
    if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
        err != 0) {
      bip::shared_memory_object::remove(name.c_str());
      return ReserveError(name, bytes, err);
    }
    // A second open file description, read-only, of this very object.
    UniqueFd read_only(::open(absl::StrCat("/proc/self/fd/", fd).c_str(),
                              O_RDONLY | O_CLOEXEC));
    if (!read_only) {
      const int err = errno;
      bip::shared_memory_object::remove(name.c_str());
      return absl::Status(err == EMFILE || err == ENFILE
                              ? absl::StatusCode::kResourceExhausted
                              : absl::StatusCode::kInternal,
                          absl::StrCat("reopening '", name,
                                       "' read-only: ", std::strerror(err)));
    }
    bip::mapped_region region(shm, bip::read_write, 0, bytes);
    // The mapping keeps the memory; the descriptor closes with `shm`.
    return std::unique_ptr<SharedSegment>(new SharedSegment(
        std::move(name), std::move(region), std::move(read_only)));
  } catch (const bip::interprocess_exception& e) {
    // Never remove a name we did not create.
    if (e.get_error_code() == bip::already_exists_error) {
      return absl::AlreadyExistsError(
          absl::StrCat("shared-memory segment '", name, "' already exists"));
    }
    bip::shared_memory_object::remove(name.c_str());
    return absl::InternalError(absl::StrCat(
        "cannot create shared-memory segment '", name, "': ", e.what()));
  }
}

SharedSegment::~SharedSegment() { Unlink(); }

bool SharedSegment::DeletedElsewhere() const {
  struct stat st;
  return linked_ && ::fstat(read_only_.get(), &st) == 0 && st.st_nlink == 0;
}

void SharedSegment::Unlink() {
  if (!linked_) return;
  linked_ = false;
  bip::shared_memory_object::remove(name_.c_str());
}

std::vector<std::string> ListSegments(std::string_view prefix) {
  std::vector<std::string> names;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return names;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::string_view(entry->d_name).starts_with(prefix)) {
      names.emplace_back(entry->d_name);
    }
  }
  ::closedir(dir);
  return names;
}

int RemoveSegments(std::string_view prefix) {
  int removed = 0;
  for (const std::string& name : ListSegments(prefix)) {
    if (bip::shared_memory_object::remove(name.c_str())) ++removed;
  }
  return removed;
}

}  // namespace stoker
