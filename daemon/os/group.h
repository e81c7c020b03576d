// Unix groups by name or number.
#ifndef STOKER_DAEMON_OS_GROUP_H_
#define STOKER_DAEMON_OS_GROUP_H_

#include <sys/types.h>

#include <string_view>

#include "absl/status/statusor.h"

namespace stoker {

// A group name (or a number) -> gid; INVALID_ARGUMENT if unknown.
absl::StatusOr<gid_t> ResolveGroup(std::string_view name);

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_GROUP_H_
