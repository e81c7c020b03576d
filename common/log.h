// Logging setup: spdlog, one line per event on stderr, each line starting
// with its syslog priority ("<6>") so journald files it at the right level.
#ifndef STOKER_COMMON_LOG_H_
#define STOKER_COMMON_LOG_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "spdlog/spdlog.h"

#if !defined(ABSL_USES_STD_STRING_VIEW)
// Abseil builds with its own string_view (Debian's does): teach fmt to print
// it, so Status::message() can go straight into a log line.
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  template <typename Context>
  auto format(absl::string_view s, Context& ctx) const {
    return fmt::formatter<fmt::string_view>::format(
        fmt::string_view(s.data(), s.size()), ctx);
  }
};
#endif

namespace stoker {

// level: trace, debug, info, warn, error or off.
absl::Status InitLogging(std::string_view level);

}  // namespace stoker

#endif  // STOKER_COMMON_LOG_H_
