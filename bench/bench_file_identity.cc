// bench_file_identity: what opening a sample with the job owner's
// permissions costs (daemon/os/file_identity.h). Times ReadFile()
// (daemon/datasets/) of one small JPEG-sized file as the daemon itself and as
// another user (uid and gid 65534, the switch stokerd makes for every client
// but its own user), and prints nanoseconds per read for each and the
// difference, and reads as that user with the identity held across reads (what
// a worker does while it takes one user's samples in a row). Needs root (or
// CAP_SETUID and CAP_SETGID) for the second figure.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/support/process.h"
#include "daemon/datasets/sample_file.h"
#include "daemon/os/file_identity.h"

namespace {

double NanosPerRead(const std::string& path, const stoker::FileIdentity* as,
                    int reads) {
  std::vector<uint8_t> buffer;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reads; ++i) {
    const stoker::ActAs identity(as);
    if (!stoker::ReadFile(path, &buffer).ok()) return -1;
  }
  const std::chrono::duration<double, std::nano> took =
      std::chrono::steady_clock::now() - start;
  return took.count() / reads;
}

}  // namespace

int main() {
  stoker::testdata::TempDir dir("stoker-identity");
  ::chmod(dir.path().c_str(), 0755);
  const std::string path = dir.path() + "/sample.jpg";
  std::ofstream(path) << std::string(110 * 1024, 'x');  // ImageNet's mean
  ::chmod(path.c_str(), 0644);
  constexpr int kReads = 200000;
  const stoker::FileIdentity other{65534, 65534, {65534}};
  NanosPerRead(path, nullptr, kReads / 10);  // warm the cache
  const double own = NanosPerRead(path, nullptr, kReads);
  std::printf("read as the daemon:        %8.0f ns\n", own);
  if (!stoker::CanActAsOtherUsers()) {
    std::printf(
        "no CAP_SETUID/CAP_SETGID: cannot time reads as another user\n");
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kReads; ++i) {
    const stoker::ActAs as(&other);
  }
  const std::chrono::duration<double, std::nano> switching =
      std::chrono::steady_clock::now() - start;
  std::printf("switch and back, no file:  %8.0f ns\n",
              switching.count() / kReads);
  const double as_other = NanosPerRead(path, &other, kReads);
  std::printf("read as uid 65534:         %8.0f ns\n", as_other);
  std::printf("switching costs per open:  %8.0f ns\n", as_other - own);
  // What a worker does: one switch, then reads of the same user's files.
  stoker::HeldIdentity held;
  std::vector<uint8_t> buffer;
  const auto held_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kReads; ++i) {
    if (!held.Use(other).ok() || !stoker::ReadFile(path, &buffer).ok()) {
      return 1;
    }
  }
  const std::chrono::duration<double, std::nano> held_took =
      std::chrono::steady_clock::now() - held_start;
  std::printf("read as uid 65534, held:   %8.0f ns (a worker's case)\n",
              held_took.count() / kReads);
  return as_other < 0 ? 1 : 0;
}
