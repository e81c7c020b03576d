#include "daemon/os/group.h"

#include <grp.h>

#include <charconv>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace stoker {

absl::StatusOr<gid_t> ResolveGroup(std::string_view name) {
  gid_t number = 0;
  const auto [end, error] =
      std::from_chars(name.data(), name.data() + name.size(), number);
  if (error == std::errc() && end == name.data() + name.size()) return number;
  std::vector<char> buffer(16384);
  group entry;
  group* found = nullptr;
  const std::string key(name);
  if (::getgrnam_r(key.c_str(), &entry, buffer.data(), buffer.size(), &found) !=
          0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("group '", key, "' does not exist on this node"));
  }
  return found->gr_gid;
}

}  // namespace stoker
