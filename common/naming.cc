#include "common/naming.h"

#include <cstdint>
#include <cstdio>

namespace stoker {

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
