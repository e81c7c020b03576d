#include "daemon/os/process_identity.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

namespace stoker {
namespace {

struct Stat {
  char state = '?';
  uint64_t start_ticks = 0;
};

// Fields 3 (state) and 22 (starttime) of /proc/PID/stat; they come after
// the command name, which may hold spaces and parentheses: after its last
// ')'. nullopt-like {'?', 0} when unreadable.
Stat ReadStat(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(file, line)) return {};
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(line.substr(close + 1));
  Stat stat;
  std::string field;
  fields >> stat.state;
  for (int i = 4; i <= 21; ++i) fields >> field;
  fields >> stat.start_ticks;
  if (!fields) return {};
  return stat;
}

}  // namespace

ProcessIdentity IdentifyProcess(pid_t pid) {
  if (pid <= 0) return {};
  return {pid, ReadStat(pid).start_ticks};
}

bool ProcessGone(const ProcessIdentity& process) {
  if (process.pid <= 0) return false;
  if (::kill(process.pid, 0) != 0 && errno == ESRCH) return true;
  const Stat now = ReadStat(process.pid);
  if (now.state == 'Z' || now.state == 'X') return true;  // dead, unreaped
  return process.start_ticks != 0 && now.start_ticks != 0 &&
         now.start_ticks != process.start_ticks;
}

}  // namespace stoker
