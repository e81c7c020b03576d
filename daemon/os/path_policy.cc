#include "daemon/os/path_policy.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace stoker {
namespace {

constexpr std::string_view kNeverAllowed[] = {"/proc", "/sys", "/dev"};

bool Under(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.starts_with(dir) && path.size() > dir.size() &&
                         path[dir.size()] == '/');
}

}  // namespace

absl::StatusOr<PathPolicy> PathPolicy::Create(
    const std::vector<std::string>& roots) {
  if (roots.empty()) return PathPolicy();
  std::vector<std::string> resolved;
  for (const std::string& root : roots) {
    char buffer[PATH_MAX];
    if (::realpath(root.c_str(), buffer) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset root '", root, "': ", std::strerror(errno)));
    }
    resolved.emplace_back(buffer);
  }
  return PathPolicy(std::move(resolved));
}

// Nothing else can see a policy under construction.
PathPolicy::PathPolicy(PathPolicy&& other) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  absl::MutexLock lock(&other.mu_);
  roots_ = std::move(other.roots_);
}

absl::Status PathPolicy::SetRoots(const std::vector<std::string>& roots) {
  auto replacement = Create(roots);
  if (!replacement.ok()) return replacement.status();
  std::vector<std::string> resolved = replacement->roots();
  absl::MutexLock lock(&mu_);
  roots_ = std::move(resolved);
  return absl::OkStatus();
}

std::vector<std::string> PathPolicy::roots() const {
  absl::MutexLock lock(&mu_);
  return roots_;
}

bool PathPolicy::Allowed(const std::string& resolved) const {
  for (std::string_view never : kNeverAllowed) {
    if (Under(resolved, never)) return false;
  }
  absl::MutexLock lock(&mu_);
  for (const std::string& root : roots_) {
    if (Under(resolved, root)) return true;
  }
  return false;
}

absl::StatusOr<std::string> PathPolicy::Resolve(const std::string& path,
                                                absl::string_view field) const {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat(field, " '", path, "' does not exist"));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        field, " '", path, "' cannot be resolved: ", std::strerror(errno)));
  }
  std::string resolved(buffer);
  if (!Allowed(resolved)) {
    return absl::PermissionDeniedError(
        absl::StrCat(field, " '", path, "' resolves to '", resolved,
                     "', outside the dataset roots stokerd allows (",
                     absl::StrJoin(roots(), ", "),
                     "; never /proc, /sys or /dev): see --dataset_roots"));
  }
  return resolved;
}

absl::Status PathPolicy::CheckOpen(int fd) const {
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char target[PATH_MAX];
  const ssize_t n = ::readlink(link, target, sizeof(target) - 1);
  if (n <= 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot tell which file is open: ", std::strerror(errno)));
  }
  const std::string resolved(target, static_cast<size_t>(n));
  if (!Allowed(resolved)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "resolves to '", resolved, "', outside the allowed dataset roots"));
  }
  return absl::OkStatus();
}

}  // namespace stoker
