// Whether a process that made a request is still alive: its pid and the
// time it started (so that a pid the kernel has handed to another process
// since does not count as it).
#ifndef STOKER_DAEMON_OS_PROCESS_IDENTITY_H_
#define STOKER_DAEMON_OS_PROCESS_IDENTITY_H_

#include <sys/types.h>

#include <cstdint>

namespace stoker {

struct ProcessIdentity {
  pid_t pid = 0;             // 0: unknown
  uint64_t start_ticks = 0;  // /proc/PID/stat's starttime; 0: unreadable
};

// The process `pid` now (start_ticks 0 where /proc does not say).
ProcessIdentity IdentifyProcess(pid_t pid);

// True only when the process is known to be gone: kill(pid, 0) says there
// is no such process, or /proc shows another process started under its
// pid. An unknown pid is never gone.
bool ProcessGone(const ProcessIdentity& process);

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_PROCESS_IDENTITY_H_
