// Small POSIX helpers for tests and benchmarks: temporary directories and
// child processes.
#ifndef STOKER_BENCH_SUPPORT_PROCESS_H_
#define STOKER_BENCH_SUPPORT_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stoker::testdata {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "stoker");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child process, started with fork/exec; its stderr goes to a file that
// can be read back.
class Subprocess {
 public:
  // With `run_as` (uid, gid), the child drops its supplementary groups and
  // takes that user and group before exec (the caller must be root).
  Subprocess(const std::string& program, const std::vector<std::string>& args,
             const std::string& stderr_path,
             std::optional<std::pair<uid_t, gid_t>> run_as = std::nullopt);
  ~Subprocess();  // SIGKILL and reap if still running
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // The exit status (as from waitpid), or nullopt if still running after
  // `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // CPU seconds (user + system) the child has used so far.
  double CpuSeconds() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Waits until `path` exists (a socket being bound), up to `timeout`.
bool WaitForPath(const std::string& path, std::chrono::milliseconds timeout);

std::string ReadTextFile(const std::string& path);

}  // namespace stoker::testdata

#endif  // STOKER_BENCH_SUPPORT_PROCESS_H_
