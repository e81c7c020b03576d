// PathPolicy: which files stokerd may read on a client's behalf.
//
// A dataset path is resolved (realpath: `..` and every symlink followed) and
// must then lie inside one of the allowed roots (--dataset_roots). Kernel
// pseudo file systems (/proc, /sys, /dev) are never allowed, whatever the
// roots. Each sample file is checked again after it is opened, by the path
// of the file actually open (so a symlink swapped in after the scan cannot
// lead a worker outside the roots either).
//
// Thread-safety: thread-safe; SetRoots() may run while workers check files.
#ifndef STOKER_DAEMON_OS_PATH_POLICY_H_
#define STOKER_DAEMON_OS_PATH_POLICY_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace stoker {

class PathPolicy {
 public:
  // Every root must exist; they are resolved now.
  static absl::StatusOr<PathPolicy> Create(
      const std::vector<std::string>& roots);
  // Allows everything but the pseudo file systems.
  PathPolicy() : roots_{"/"} {}
  PathPolicy(PathPolicy&& other);

  // The resolved `path`: NOT_FOUND if it does not exist, PERMISSION_DENIED
  // (naming the roots) if it resolves outside them.
  // `field` names where the path came from in errors.
  absl::StatusOr<std::string> Resolve(
      const std::string& path, absl::string_view field = "dataset.path") const;
  // PERMISSION_DENIED unless the file open on `fd` lies inside the roots.
  absl::Status CheckOpen(int fd) const;

  // Replaces the roots (SIGHUP); files already open are not checked again.
  // On error (a root that does not exist) the old roots stay.
  absl::Status SetRoots(const std::vector<std::string>& roots);
  std::vector<std::string> roots() const;

 private:
  explicit PathPolicy(std::vector<std::string> roots)
      : roots_(std::move(roots)) {}
  bool Allowed(const std::string& resolved) const;

  mutable absl::Mutex mu_;
  std::vector<std::string> roots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_PATH_POLICY_H_
