#include "daemon/settings/preflight.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/naming.h"
#include "daemon/os/byte_size.h"
#include "daemon/os/group.h"
#include "daemon/os/path_policy.h"

namespace stoker {
namespace {

absl::Status CheckRoots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    struct stat st {};
    if (::stat(root.c_str(), &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset_roots: '", root, "': ", std::strerror(errno),
                       " (create it, or list only directories that exist)"));
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset_roots: '", root, "' is not a directory"));
    }
  }
  return PathPolicy::Create(roots).status();
}

absl::Status CheckBudget(uint64_t budget, const std::string& shm_dir) {
  struct statvfs vfs {};
  if (budget == 0 || ::statvfs(shm_dir.c_str(), &vfs) != 0) {
    return absl::OkStatus();
  }
  const uint64_t size = uint64_t{vfs.f_blocks} * vfs.f_frsize;
  if (budget <= size) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "shm_budget: ", FormatByteSize(budget), " is more than the whole of ",
      shm_dir, " (", FormatByteSize(size),
      "); set it a little below that size, or enlarge ", shm_dir));
}

absl::Status CheckWorkers(int workers) {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  if (workers <= kMaxWorkersPerCore * cores) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("workers: ", workers, " is more than ", kMaxWorkersPerCore,
                   " per core (this machine has ", cores,
                   "); 0 gives one per core but one"));
}

absl::Status CheckSocketPath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISSOCK(st.st_mode)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "socket: ", path,
      " exists and is not a socket; stokerd will not replace it (move it "
      "away or choose another socket)"));
}

}  // namespace

absl::Status CheckAgainstMachine(const DaemonOptions& options,
                                 const std::string& shm_dir) {
  if (absl::Status roots = CheckRoots(options.dataset_roots); !roots.ok()) {
    return roots;
  }
  if (!options.socket_group.empty()) {
    if (auto gid = ResolveGroup(options.socket_group); !gid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("socket_group: ", gid.status().message()));
    }
  }
  if (absl::Status budget = CheckBudget(options.shm_budget_bytes, shm_dir);
      !budget.ok()) {
    return budget;
  }
  if (absl::Status workers = CheckWorkers(options.workers); !workers.ok()) {
    return workers;
  }
  if (options.inherited_sockets.empty()) {
    const std::string path = SocketPathFromTarget(options.target);
    for (const std::string& p : {path, RingSocketPath(path)}) {
      if (absl::Status socket = CheckSocketPath(p); !socket.ok()) return socket;
    }
  }
  return absl::OkStatus();
}

}  // namespace stoker
