// stokerd as a real process: start, serve, drain on SIGTERM, refuse a second
// instance, clean up after a predecessor killed with SIGKILL.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "common/naming.h"
#include "common/unique_fd.h"
#include "daemon/shm/shm_segment.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::Subprocess;
using testdata::TempDir;

class ProcessTest : public ::testing::Test {
 protected:
  ProcessTest()
      : socket_(dir_.path() + "/stoker.sock"),
        target_("unix://" + socket_),
        prefix_(SegmentPrefix(socket_)) {
    testing::MakeDataset(dir_.path() + "/data", 2, 6);
  }
  ~ProcessTest() override {
    EXPECT_TRUE(ListSegments(prefix_).empty()) << "segments left behind";
    RemoveSegments(prefix_);
  }

  std::unique_ptr<Subprocess> StartDaemon(const std::string& log) {
    auto daemon = std::make_unique<Subprocess>(
        STOKERD_PATH,
        std::vector<std::string>{"--config=", "--socket=" + target_,
                                 "--workers=2"},
        dir_.path() + "/" + log);
    EXPECT_TRUE(testdata::WaitForPath(socket_, std::chrono::seconds(10)))
        << testdata::ReadTextFile(dir_.path() + "/" + log);
    return daemon;
  }

  JobSpec Spec(uint32_t epochs) {
    return {.dataset_path = dir_.path() + "/data",
            .batch_size = 4,
            .slots = 2,
            .height = 16,
            .width = 16,
            .epochs = epochs};
  }

  TempDir dir_{"stoker-proc"};
  const std::string socket_;
  const std::string target_;
  const std::string prefix_;
};

TEST_F(ProcessTest, ServesThenDrainsOnSigterm) {
  auto daemon = StartDaemon("stokerd.log");
  auto client = Client::Connect(target_);
  ASSERT_TRUE(client.ok()) << client.status();
  auto job = (*client)->CreateJob(Spec(1));
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = (*client)->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  size_t samples = 0;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) break;
    samples += batch->size();
  }
  EXPECT_EQ(samples, 12u);
  auto endless = (*client)->CreateJob(Spec(0));
  // No reconnecting: this consumer is to see the daemon go.
  auto streaming = (*client)->Attach(endless->id, {.reconnect_timeout = {}});
  ASSERT_TRUE((*streaming)->Next().ok());
  EXPECT_FALSE(ListSegments(prefix_).empty());

  daemon->Signal(SIGTERM);
  absl::Status status;
  while (status.ok()) status = (*streaming)->Next().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  const auto exit = daemon->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value()) << "stokerd did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0);
  EXPECT_FALSE(std::filesystem::exists(socket_));
  EXPECT_TRUE(ListSegments(prefix_).empty());
  const std::string log = testdata::ReadTextFile(dir_.path() + "/stokerd.log");
  EXPECT_NE(log.find("draining"), std::string::npos) << log;
}

TEST_F(ProcessTest, ASecondDaemonOnTheSameSocketRefusesToStart) {
  auto first = StartDaemon("first.log");
  Subprocess second(STOKERD_PATH, {"--config=", "--socket=" + target_},
                    dir_.path() + "/second.log");
  const auto exit = second.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value()) << "the second daemon kept running";
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 1);
  const std::string log = testdata::ReadTextFile(dir_.path() + "/second.log");
  EXPECT_NE(log.find("already serving"), std::string::npos) << log;
  // The first one still owns its socket and answers.
  auto client = Client::Connect(target_);
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->GetStats().ok());
  first->Signal(SIGTERM);
  EXPECT_TRUE(first->Wait(std::chrono::seconds(20)).has_value());
}

TEST_F(ProcessTest, ARestartRemovesWhatAKilledDaemonLeftBehind) {
  {
    auto daemon = StartDaemon("killed.log");
    auto client = Client::Connect(target_);
    ASSERT_TRUE(client.ok());
    ASSERT_TRUE((*client)->CreateJob(Spec(0)).ok());
    ASSERT_TRUE((*client)->CreateJob(Spec(0)).ok());
    daemon->Signal(SIGKILL);
    ASSERT_TRUE(daemon->Wait(std::chrono::seconds(10)).has_value());
  }
  EXPECT_EQ(ListSegments(prefix_).size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(socket_)) << "stale socket expected";
  // A segment of a daemon on another socket is not the restarted one's.
  const std::string other = SegmentPrefix(socket_ + ".other") + "job";
  auto foreign = SharedSegment::Create(other, 4096, 0600);
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  auto daemon = StartDaemon("restarted.log");
  auto client = Client::Connect(target_);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE(ListSegments(prefix_).empty());
  EXPECT_EQ(ListSegments(other).size(), 1u) << "another daemon's segment";
  auto jobs = (*client)->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
  daemon->Signal(SIGTERM);
  ASSERT_TRUE(daemon->Wait(std::chrono::seconds(20)).has_value());
  const std::string log =
      testdata::ReadTextFile(dir_.path() + "/restarted.log");
  EXPECT_NE(log.find("removed 2 shared-memory segments"), std::string::npos)
      << log;
}

TEST_F(ProcessTest, ANonUnixSocketAddressIsRefusedClearly) {
  Subprocess daemon(STOKERD_PATH, {"--config=", "--socket=dns:localhost:1234"},
                    dir_.path() + "/bad.log");
  const auto exit = daemon.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value());
  // 2: a configuration error, found before anything starts.
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 2);
  const std::string log = testdata::ReadTextFile(dir_.path() + "/bad.log");
  EXPECT_NE(log.find("--socket: 'dns:localhost:1234' is not a Unix socket"),
            std::string::npos)
      << log;
}

// systemd's side of Type=notify: a datagram socket given as NOTIFY_SOCKET.
TEST_F(ProcessTest, NotifiesReadyOnlyOnceListeningThenWatchdogThenStopping) {
  const std::string notify_path = dir_.path() + "/notify";
  const UniqueFd notify_fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const int notify = notify_fd.get();
  ASSERT_GE(notify, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, notify_path.c_str(),
               sizeof(address.sun_path) - 1);
  ASSERT_EQ(
      ::bind(notify, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
      0);
  const timeval timeout{20, 0};
  ::setsockopt(notify, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  auto receive = [&] {
    char buffer[512];
    const ssize_t n = ::recv(notify, buffer, sizeof(buffer), 0);
    return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
  };
  // The child inherits these (each test runs in a process of its own).
  ::setenv("NOTIFY_SOCKET", notify_path.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);
  Subprocess daemon(STOKERD_PATH,
                    {"--config=", "--socket=" + target_, "--workers=1"},
                    dir_.path() + "/stokerd.log");
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");

  const std::string ready = receive();
  EXPECT_NE(ready.find("READY=1"), std::string::npos) << ready;
  // Ready means serving: the socket answers at once.
  auto client = Client::Connect(target_, std::chrono::milliseconds(500));
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_TRUE((*client)->GetStats().ok());
  // WATCHDOG_USEC=200000: a ping every 100 ms.
  int pings = 0;
  for (int i = 0; i < 5; ++i) pings += receive() == "WATCHDOG=1" ? 1 : 0;
  EXPECT_EQ(pings, 5);
  daemon.Signal(SIGTERM);
  std::string message;
  do {
    message = receive();
  } while (message == "WATCHDOG=1");
  EXPECT_EQ(message, "STOPPING=1");
  const auto exit = daemon.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0);
}

}  // namespace
}  // namespace stoker
