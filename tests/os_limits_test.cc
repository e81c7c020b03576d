// What stokerd reads of the system to bound itself: the cgroup's memory
// limit (fake /proc and /sys trees) and whether a process is gone.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bench/support/process.h"
#include "daemon/os/cgroup_memory.h"
#include "daemon/os/process_identity.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(CgroupMemoryLimit, ReadsV2AndV1AndTakesNoLimitAsNone) {
  testdata::TempDir dir("stoker-cgroup");
  const std::string proc = dir.path() + "/cgroup", root = dir.path() + "/sys";
  Write(proc, "0::/system.slice/stokerd.service\n");
  Write(root + "/system.slice/stokerd.service/memory.max", "max\n");
  EXPECT_EQ(CgroupMemoryLimit(proc, root), std::nullopt);
  Write(root + "/system.slice/stokerd.service/memory.max", "1073741824\n");
  EXPECT_EQ(CgroupMemoryLimit(proc, root), uint64_t{1} << 30);
  // v1 (a hybrid hierarchy): the memory controller's file.
  Write(proc, "4:memory:/job\n1:cpu,cpuacct:/\n0::/\n");
  Write(root + "/memory/job/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(CgroupMemoryLimit(proc, root), std::nullopt);
  Write(root + "/memory/job/memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(CgroupMemoryLimit(proc, root), uint64_t{512} << 20);
  EXPECT_EQ(CgroupMemoryLimit(dir.path() + "/absent", root), std::nullopt);
  // The rings get the limit less a reserve of a quarter, at least 64 MiB.
  EXPECT_EQ(RingRoomUnder(uint64_t{4} << 30), uint64_t{3} << 30);
  EXPECT_EQ(RingRoomUnder(uint64_t{256} << 20), uint64_t{192} << 20);
  EXPECT_EQ(RingRoomUnder(uint64_t{100} << 20), uint64_t{36} << 20);
  EXPECT_EQ(RingRoomUnder(uint64_t{50} << 20), 0u);
}

TEST(ProcessIdentity, ALiveProcessIsNotGoneAReapedOneIs) {
  const ProcessIdentity self = IdentifyProcess(::getpid());
  EXPECT_GT(self.start_ticks, 0u);
  EXPECT_FALSE(ProcessGone(self));
  // The same pid started at another time: the pid was reused.
  EXPECT_TRUE(ProcessGone({self.pid, self.start_ticks + 1}));
  EXPECT_FALSE(ProcessGone({}));  // unknown: never gone
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const ProcessIdentity identity = IdentifyProcess(child);
  EXPECT_FALSE(ProcessGone(identity));
  ::kill(child, SIGKILL);
  // Dead but not reaped (a zombie) counts as gone too.
  for (int i = 0; i < 200 && !ProcessGone(identity); ++i) ::usleep(5000);
  EXPECT_TRUE(ProcessGone(identity));
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(ProcessGone(identity));
}

}  // namespace
}  // namespace stoker
