// stokerd as systemd runs it: a config file (flags winning), SIGHUP
// reloads, and sockets handed over by socket activation.
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_split.h"
#include "common/naming.h"
#include "daemon/shm/shm_segment.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::Subprocess;
using testdata::TempDir;

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest()
      : socket_(dir_.path() + "/stoker.sock"),
        target_("unix://" + socket_),
        config_(dir_.path() + "/stokerd.conf"),
        log_(dir_.path() + "/stokerd.log") {
    testing::MakeDataset(dir_.path() + "/data", 2, 4);
  }
  ~ServiceTest() override {
    EXPECT_TRUE(ListSegments(SegmentPrefix(socket_)).empty());
    RemoveSegments(SegmentPrefix(socket_));
  }

  void WriteConfig(const std::string& text) {
    const std::string temporary = config_ + ".new";
    std::ofstream(temporary) << text;
    std::filesystem::rename(temporary, config_);
  }
  bool LogShows(const std::string& text) {
    return testing::Eventually([&] {
      return testdata::ReadTextFile(log_).find(text) != std::string::npos;
    });
  }
  JobSpec Spec() {
    return {.dataset_path = dir_.path() + "/data",
            .batch_size = 2,
            .slots = 2,
            .height = 8,
            .width = 8,
            .epochs = 0};
  }
  void StopCleanly(Subprocess& daemon) {
    daemon.Signal(SIGTERM);
    const auto exit = daemon.Wait(std::chrono::seconds(20));
    ASSERT_TRUE(exit.has_value());
    EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0);
  }

  TempDir dir_{"stoker-svc"};
  const std::string socket_;
  const std::string target_;
  const std::string config_;
  const std::string log_;
};

TEST_F(ServiceTest, TheFileConfiguresFlagsWinAndSighupReloads) {
  WriteConfig("socket: \"" + target_ + "\"\nworkers: 3\nmax_jobs: 5\n");
  Subprocess daemon(STOKERD_PATH, {"--config=" + config_, "--workers=1"}, log_);
  ASSERT_TRUE(testdata::WaitForPath(socket_, std::chrono::seconds(10)))
      << testdata::ReadTextFile(log_);
  auto client = Client::Connect(target_);
  ASSERT_TRUE(client.ok()) << client.status();
  auto stats = (*client)->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->workers, 1u);  // the flag, not the file's 3

  WriteConfig("socket: \"" + target_ +
              "\"\nworkers: 2\nmax_jobs: 1\nlog_level: \"debug\"\n");
  daemon.Signal(SIGHUP);
  EXPECT_TRUE(LogShows("reload: max_jobs: 5 -> 1"));
  EXPECT_TRUE(LogShows("reload: log_level: info -> debug"));
  // workers comes from the command line: the file cannot change it.
  EXPECT_EQ(testdata::ReadTextFile(log_).find("workers cannot change"),
            std::string::npos);
  ASSERT_TRUE((*client)->CreateJob(Spec()).ok());
  EXPECT_EQ((*client)->CreateJob(Spec()).status().code(),
            absl::StatusCode::kResourceExhausted);

  WriteConfig("socket: \"unix:///elsewhere.sock\"\nmax_jobs: 1\n");
  daemon.Signal(SIGHUP);
  EXPECT_TRUE(LogShows("reload: socket cannot change while stokerd runs"));

  WriteConfig("max_jobs: 2\nshm_budget: \"lots\"\n");
  daemon.Signal(SIGHUP);
  EXPECT_TRUE(LogShows("reload refused, nothing changed: " + config_ +
                       ":2: shm_budget: "));
  // Still serving, limits unchanged.
  EXPECT_EQ((*client)->CreateJob(Spec()).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*client)->GetStats().ok());
  StopCleanly(daemon);
}

TEST_F(ServiceTest, AnInvalidFileStopsTheStartNamingFileLineAndField) {
  WriteConfig("socket: \"" + target_ + "\"\n\nlease_timeout: \"a while\"\n");
  Subprocess daemon(STOKERD_PATH, {"--config=" + config_}, log_);
  const auto exit = daemon.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 2);
  const std::string log = testdata::ReadTextFile(log_);
  EXPECT_NE(
      log.find(config_ + ":3: lease_timeout: 'a while' is not a duration"),
      std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(socket_));

  // An explicitly named file that does not exist is an error too.
  Subprocess missing(STOKERD_PATH, {"--config=" + dir_.path() + "/absent"},
                     log_ + "2");
  const auto missing_exit = missing.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(missing_exit.has_value());
  EXPECT_EQ(WEXITSTATUS(*missing_exit), 2);
  EXPECT_NE(testdata::ReadTextFile(log_ + "2").find("absent"),
            std::string::npos);
}

TEST_F(ServiceTest, CheckConfigValidatesAndExits) {
  WriteConfig("socket: \"" + target_ + "\"\nshm_budget: \"3G\"\n");
  Subprocess daemon(STOKERD_PATH, {"--config=" + config_, "--check_config"},
                    log_);
  const auto exit = daemon.Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(WEXITSTATUS(*exit), 0);
  EXPECT_FALSE(std::filesystem::exists(socket_));
}

TEST_F(ServiceTest, LogLinesHaveJournalPrioritiesAndJobIdsAndNoneGoesPerBatch) {
  const auto data = testing::MakeDataset(dir_.path() + "/logdata", 2, 10);
  std::ofstream(data.paths[4], std::ios::trunc) << "not a jpeg";
  Subprocess daemon(STOKERD_PATH,
                    {"--config=", "--socket=" + target_, "--workers=1"}, log_);
  ASSERT_TRUE(testdata::WaitForPath(socket_, std::chrono::seconds(10)));
  auto client = Client::Connect(target_);
  ASSERT_TRUE(client.ok()) << client.status();
  auto job = (*client)->CreateJob({.dataset_path = dir_.path() + "/logdata",
                                   .batch_size = 2,
                                   .slots = 2,
                                   .height = 8,
                                   .width = 8,
                                   .epochs = 3});
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = (*client)->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  int batches = 0;
  while ((*consumer)->Next().ok()) ++batches;
  EXPECT_EQ(batches, 30);
  consumer->reset();
  ASSERT_TRUE(LogShows("finished"));
  StopCleanly(daemon);

  const std::string log = testdata::ReadTextFile(log_);
  std::vector<std::string> lines = absl::StrSplit(log, '\n', absl::SkipEmpty());
  EXPECT_LT(lines.size(), 15u) << log;  // 30 batches: nothing per batch
  int job_lines = 0;
  for (const std::string& line : lines) {
    EXPECT_TRUE(line.size() > 3 && line[0] == '<' && line[1] >= '0' &&
                line[1] <= '7' && line[2] == '>')
        << line;
    if (line.find(job->id) != std::string::npos) {
      ++job_lines;
      EXPECT_NE(line.find("job " + job->id + ": "), std::string::npos) << line;
    }
  }
  // Created, the broken file (a warning, once though read 3 times),
  // finished.
  EXPECT_GE(job_lines, 3) << log;
  EXPECT_NE(log.find("<4>warning job " + job->id + ": " + data.paths[4] + ": "),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("<6>info job " + job->id + ": finished"),
            std::string::npos)
      << log;
}

// systemd-socket-activate binds both sockets, waits for a first client and
// execs stokerd with them (LISTEN_FDS), as stokerd.socket does.
TEST_F(ServiceTest, SocketActivationServesOnTheInheritedSockets) {
  std::vector<std::string> args = {"-l", socket_, "-l",
                                   RingSocketPath(socket_)};
  // It starts stokerd with a clean environment: pass the sanitizers' on.
  for (const char* name : {"ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
    if (const char* value = std::getenv(name); value != nullptr) {
      args.insert(args.end(), {"-E", std::string(name) + "=" + value});
    }
  }
  args.insert(args.end(), {STOKERD_PATH, "--config=", "--socket=" + target_,
                           "--workers=1"});
  Subprocess activator("/usr/bin/systemd-socket-activate", args, log_);
  ASSERT_TRUE(
      testdata::WaitForPath(RingSocketPath(socket_), std::chrono::seconds(10)));
  auto client = Client::Connect(target_, std::chrono::seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  auto job = (*client)->CreateJob(Spec());
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = (*client)->Attach(job->id);  // maps the ring: ring socket
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  auto batch = (*consumer)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->size(), 2u);
  EXPECT_TRUE(LogShows("(socket activation)"));
  batch = absl::CancelledError();
  consumer->reset();
  client->reset();
  StopCleanly(activator);
  // The sockets belong to whoever activated stokerd: left in place.
  EXPECT_TRUE(std::filesystem::exists(socket_));
}

}  // namespace
}  // namespace stoker
