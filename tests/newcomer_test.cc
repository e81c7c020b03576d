// What a newcomer meets first, tried with the real programs against a real
// daemon: --help, every spelling of a socket, a relative dataset path,
// --check_config against what start refuses, start errors, and the hints
// given when a socket is out of reach.
#include <grp.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/naming.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::TestDaemon;

using Outcome = testing::CommandRun;
using testing::RunCommand;

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Newcomer, HelpListsEachProgramsOwnFlagsWithTheirDefaults) {
  testdata::TempDir dir("stoker-help");
  const std::vector<std::pair<std::string, std::vector<std::string>>> programs =
      {
          {STOKERD_PATH,
           {"--workers=0", "--socket=unix:///run/stoker/stoker.sock",
            "--check_config=false", "--lease_timeout=10m"}},
          {STOKERCTL_PATH, {"--json=false", "--batch_size=256", "--socket="}},
          {EXAMPLE_TRAINER_PATH, {"--data=\"\"", "--epochs=2", "--target="}},
          {MAKE_DATASET_PATH, {"--out=\"\"", "--classes=8"}},
      };
  for (const auto& [program, flags] : programs) {
    const Outcome run = RunCommand(program + " --help", dir.path());
    EXPECT_EQ(run.exit_code, 0) << program << ": " << run.all();
    EXPECT_TRUE(Has(run.out, "usage: ")) << run.out;
    for (const std::string& flag : flags) {
      EXPECT_TRUE(Has(run.out, "\n  " + flag))
          << program << " lacks " << flag << ":\n"
          << run.out;
    }
    EXPECT_FALSE(Has(run.all(), "No flags matched")) << run.all();
    EXPECT_FALSE(Has(run.all(), "SetProgramUsageMessage")) << run.all();
    // Only the program's own flags: not gRPC's or Abseil's.
    EXPECT_FALSE(Has(run.out, "--flagfile")) << run.out;
    EXPECT_EQ(RunCommand(program + " -h", dir.path()).out, run.out);
  }
  const Outcome version =
      RunCommand(std::string(STOKERD_PATH) + " --version", dir.path());
  EXPECT_TRUE(Has(version.out, "stokerd 0.")) << version.all();
}

TEST(Newcomer, EverySpellingOfTheSocketReachesTheDaemon) {
  TestDaemon daemon;
  const std::string path = SocketPathFromTarget(daemon.target());
  const std::string in_dir = "cd " + daemon.dir() + " && " + STOKERCTL_PATH;
  for (const std::string& socket :
       {path, "unix://" + path, "unix:" + path, std::string("stoker.sock"),
        std::string("./stoker.sock"), std::string("unix:stoker.sock"),
        std::string("unix://stoker.sock")}) {
    const Outcome run =
        RunCommand(in_dir + " --socket=" + socket + " status", daemon.dir());
    EXPECT_EQ(run.exit_code, 0) << socket << ": " << run.all();
    EXPECT_TRUE(Has(run.out, "SERVING")) << socket << ": " << run.all();
  }
  const Outcome tcp =
      RunCommand(in_dir + " --socket=localhost:1234 status", daemon.dir());
  EXPECT_EQ(tcp.exit_code, 2) << tcp.all();
  EXPECT_TRUE(Has(tcp.err, "not a Unix socket")) << tcp.all();
  // The SDK takes the same spellings.
  EXPECT_TRUE(Client::Connect(path).ok());
  EXPECT_TRUE(Client::Connect("unix:" + path).ok());
  EXPECT_EQ(Client::Connect("localhost:1234").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Newcomer, ARelativeDatasetPathIsTakenFromTheCallersDirectory) {
  TestDaemon daemon({.workers = 1});
  testing::MakeDataset(daemon.dir() + "/data", 2, 4, 32, 24);
  // The daemon runs in this test's directory, where there is no "data".
  ASSERT_FALSE(fs::exists("data"));
  const Outcome run =
      RunCommand("cd " + daemon.dir() + " && " + STOKERCTL_PATH +
                     " --socket=" + daemon.target() +
                     " bench data --batches=2 --batch_size=4 --size=16",
                 daemon.dir());
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(Has(run.out, "images/s")) << run.all();
}

class CheckConfig : public ::testing::Test {
 protected:
  // Writes `body` into a fresh file, after a socket line of its own unless
  // `body` names the socket; returns its path.
  std::string Config(const std::string& body) {
    const std::string path = dir_.path() + "/stokerd.conf";
    std::ofstream file(path, std::ios::trunc);
    if (!body.starts_with("socket:")) {
      file << "socket: \"" << dir_.path() << "/s.sock\"\n";
    }
    file << body << "\n";
    return path;
  }
  Outcome Stokerd(const std::string& args) {
    return RunCommand(std::string(STOKERD_PATH) + " " + args, dir_.path());
  }
  testdata::TempDir dir_{"stoker-check"};
};

TEST_F(CheckConfig, RefusesWhatStartWouldRefuseAndStartRefusesItToo) {
  std::ofstream(dir_.path() + "/plain-file") << "not a socket";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dataset_roots: \"" + dir_.path() + "/missing\"", "dataset_roots"},
      {"shm_budget: \"100000T\"", "shm_budget"},
      {"workers: 1000", "workers: 1000 is more than 4 per core"},
      {"socket_group: \"no-such-group-here\"", "socket_group"},
      {"socket: \"" + dir_.path() + "/plain-file\"", "is not a socket"},
  };
  for (const auto& [line, message] : cases) {
    const std::string config = Config(line);
    const Outcome check = Stokerd("--config=" + config + " --check_config");
    EXPECT_EQ(check.exit_code, 2) << line << ": " << check.all();
    EXPECT_TRUE(Has(check.err, message)) << line << ": " << check.all();
    EXPECT_FALSE(Has(check.out, "valid")) << check.all();
    const Outcome start = Stokerd("--config=" + config);
    EXPECT_NE(start.exit_code, 0) << line;
    EXPECT_TRUE(Has(start.err, message)) << line << ": " << start.all();
  }
  // The regular file at the socket path is still there, untouched.
  EXPECT_EQ(testdata::ReadTextFile(dir_.path() + "/plain-file"),
            "not a socket");
}

TEST_F(CheckConfig, TakesByteSizesAndDurationsWithoutQuotes) {
  const Outcome run = Stokerd("--config=" +
                              Config("shm_budget: 1G  # one gibibyte\n"
                                     "lease_timeout: 5m\nkeepalive: 2s") +
                              " --check_config");
  EXPECT_EQ(run.exit_code, 0) << run.all();
  EXPECT_TRUE(Has(run.out, "shm_budget: 1G\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "lease_timeout: 5m\n")) << run.out;
  EXPECT_TRUE(Has(run.out, "keepalive: 2s\n")) << run.out;
  EXPECT_TRUE(Has(
      run.out, "# rings: /dev/shm/" + SegmentPrefix(dir_.path() + "/s.sock")))
      << run.out;
}

TEST_F(CheckConfig, AFailedStartSaysCannotStartAndNeverStopped) {
  // A metrics port that is taken: found only when stokerd binds it.
  const UniqueFd taken_fd(::socket(AF_INET, SOCK_STREAM, 0));
  const int taken = taken_fd.get();
  sockaddr_in address{.sin_family = AF_INET,
                      .sin_port = 0,
                      .sin_addr = {htonl(INADDR_LOOPBACK)}};
  ASSERT_EQ(
      ::bind(taken, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(taken, 1), 0);
  socklen_t length = sizeof(address);
  ::getsockname(taken, reinterpret_cast<sockaddr*>(&address), &length);
  const Outcome run = Stokerd("--config= --socket=" + dir_.path() +
                              "/s.sock --metrics_address=127.0.0.1:" +
                              std::to_string(ntohs(address.sin_port)));
  EXPECT_EQ(run.exit_code, 1) << run.all();
  EXPECT_TRUE(Has(run.err, "cannot start")) << run.all();
  EXPECT_FALSE(Has(run.err, "stopped")) << run.all();
}

TEST_F(CheckConfig, ALostStartRaceNamesThePidOrSaysTheOtherIsStarting) {
  const std::string socket = dir_.path() + "/s.sock";
  const UniqueFd lock_fd(
      ::open((socket + ".lock").c_str(), O_RDWR | O_CREAT, 0600));
  const int lock = lock_fd.get();
  ASSERT_EQ(::flock(lock, LOCK_EX | LOCK_NB), 0);
  // Held, but no pid written yet: the winner is still starting.
  Outcome run = Stokerd("--config= --socket=" + socket);
  EXPECT_EQ(run.exit_code, 1) << run.all();
  EXPECT_TRUE(Has(run.err, "another stokerd is starting on " + socket))
      << run.all();
  EXPECT_FALSE(Has(run.err, "(pid )")) << run.all();
  ASSERT_EQ(::pwrite(lock, "4242", 4, 0), 4);
  run = Stokerd("--config= --socket=" + socket);
  EXPECT_TRUE(Has(run.err, "another stokerd (pid 4242) is already serving"))
      << run.all();
}

constexpr uid_t kOtherUid = 65534;

// stokerctl copied where another user can run it.
class PermissionHints : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "switching users needs root";
    ::chmod(tools_.path().c_str(), 0755);
    const std::string closed =
        testing::PathClosedToOthers(tools_.path() + "/x");
    if (!closed.empty()) GTEST_SKIP() << closed;
    stokerctl_ = tools_.path() + "/stokerctl";
    fs::copy_file(STOKERCTL_PATH, stokerctl_);
    ::chmod(stokerctl_.c_str(), 0755);
  }
  // `stokerctl status` as uid/gid 65534; what it printed.
  Outcome StatusAsOtherUser(const std::string& target) {
    Outcome run;
    const std::string out = tools_.path() + "/out";
    testdata::Subprocess child(stokerctl_, {"--socket=" + target, "status"},
                               out, std::make_pair(kOtherUid, kOtherUid));
    const auto status = child.Wait(std::chrono::seconds(30));
    run.exit_code = status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
    run.err = testdata::ReadTextFile(out);
    return run;
  }
  testdata::TempDir tools_{"stoker-tools"};
  std::string stokerctl_;
};

TEST_F(PermissionHints, NameTheActualCause) {
  TestDaemon daemon;  // no socket_group: the sockets keep root's group
  ::chmod(daemon.dir().c_str(), 0755);
  Outcome run = StatusAsOtherUser(daemon.target());
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_TRUE(Has(run.err, "belongs to group root")) << run.err;
  EXPECT_FALSE(Has(run.err, "Join the group")) << run.err;

  ::chmod(daemon.dir().c_str(), 0700);
  run = StatusAsOtherUser(daemon.target());
  EXPECT_TRUE(Has(run.err, "you may not enter the directory " + daemon.dir()))
      << run.err;

  const struct group* other = ::getgrnam("daemon");
  if (other == nullptr) return;  // no second group to try
  TestDaemon grouped({.socket_group = "daemon"});
  ::chmod(grouped.dir().c_str(), 0755);
  run = StatusAsOtherUser(grouped.target());
  EXPECT_TRUE(Has(run.err, "you are not in group daemon")) << run.err;
  EXPECT_TRUE(Has(run.err, "usermod -aG daemon")) << run.err;
}

}  // namespace
}  // namespace stoker
