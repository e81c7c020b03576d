#ifndef STOKER_DAEMON_VERSION_H_
#define STOKER_DAEMON_VERSION_H_

namespace stoker {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace stoker

#endif  // STOKER_DAEMON_VERSION_H_
