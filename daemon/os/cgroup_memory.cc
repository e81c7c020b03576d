#include "daemon/os/cgroup_memory.h"

#include <algorithm>
#include <fstream>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace stoker {
namespace {

std::optional<uint64_t> ReadLimit(const std::string& path) {
  std::ifstream file(path);
  std::string text;
  if (!std::getline(file, text)) return std::nullopt;
  uint64_t bytes = 0;
  // v2 writes "max"; v1 a page-rounded 2^63 - 1 for "unlimited".
  if (!absl::SimpleAtoi(text, &bytes) || bytes >= (uint64_t{1} << 62)) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace

std::optional<uint64_t> CgroupMemoryLimit(const std::string& proc_cgroup,
                                          const std::string& cgroup_root) {
  std::ifstream file(proc_cgroup);
  std::optional<uint64_t> limit;
  for (std::string line; std::getline(file, line);) {
    // "0::/system.slice/stokerd.service" (v2), "7:memory:/path" (v1).
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string_view controllers(line.data() + first + 1,
                                       second - first - 1);
    const std::string path = line.substr(second + 1);
    std::optional<uint64_t> found;
    if (line.starts_with("0::")) {
      found = ReadLimit(cgroup_root + path + "/memory.max");
    } else if (controllers == "memory" ||
               controllers.find("memory,") != std::string_view::npos ||
               controllers.ends_with(",memory")) {
      found =
          ReadLimit(cgroup_root + "/memory" + path + "/memory.limit_in_bytes");
    }
    if (found) limit = limit ? std::min(*limit, *found) : *found;
  }
  return limit;
}

uint64_t RingRoomUnder(uint64_t cgroup_limit) {
  const uint64_t reserve =
      std::max<uint64_t>(cgroup_limit / 4, uint64_t{64} << 20);
  return cgroup_limit > reserve ? cgroup_limit - reserve : 0;
}

}  // namespace stoker
