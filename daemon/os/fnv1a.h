// FNV-1a (64 bits): a stable file name from a key, the same in every run
// and on every machine (std::hash promises neither).
#ifndef STOKER_DAEMON_OS_FNV1A_H_
#define STOKER_DAEMON_OS_FNV1A_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace stoker {

inline uint64_t Fnv1a(absl::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : text) hash = (hash ^ uint8_t(c)) * 0x100000001b3ull;
  return hash;
}

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_FNV1A_H_
