#include "common/naming.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace stoker {

absl::StatusOr<std::string> NormalizeSocketTarget(std::string_view target) {
  std::string_view path = target;
  if (path.starts_with("unix://")) {
    path.remove_prefix(7);
  } else if (path.starts_with("unix:")) {
    path.remove_prefix(5);
  } else if (const size_t colon = path.find(':');
             colon != std::string_view::npos && path.find('/') > colon) {
    // "dns:host", "host:1234", "ipv4:..." : a scheme or a port, no path.
    return absl::InvalidArgumentError(absl::StrCat(
        "'", std::string(target),
        "' is not a Unix socket: give its path, e.g. "
        "/run/stoker/stoker.sock or unix:///run/stoker/stoker.sock"));
  }
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(target),
                     "' names no socket path (e.g. /run/stoker/stoker.sock)"));
  }
  std::error_code error;
  const std::filesystem::path absolute =
      std::filesystem::absolute(std::filesystem::path(path), error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot make '", std::string(path), "' absolute: ", error.message()));
  }
  return absl::StrCat("unix://", absolute.lexically_normal().string());
}

std::string SocketPathFromTarget(std::string_view target) {
  for (std::string_view scheme : {"unix://", "unix:"}) {
    if (target.starts_with(scheme)) {
      return std::string(target.substr(scheme.size()));
    }
  }
  if (target.starts_with("/")) return std::string(target);
  return "";
}

std::string SegmentPrefix(std::string_view socket_path) {
  // FNV-1a: stable across builds and platforms, unlike std::hash.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : socket_path) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "stoker-%016llx-",
                static_cast<unsigned long long>(hash));
  return prefix;
}

std::string RingSocketPath(std::string_view socket_path) {
  return std::string(socket_path) + ".ring";
}

}  // namespace stoker
