// Soak: three resuming trainers (stoker_probe train) against a stokerd
// process, under random SIGKILLs of the trainers, random freezes of them
// (SIGSTOP, then SIGCONT up to 5 s later: past the lease timeout of 2 s and
// the keepalive of 2 s, which closes a connection after about 4 s), and a
// SIGKILL and restart of the daemon. A trainer steps 5 ms on each batch and
// logs it only once it confirmed it. At the end: every completed
// epoch of every trainer held each sample exactly once, batches followed
// each other without a gap or a repeat across every kill and freeze, no
// segment outlived its job or the daemon, and the daemon's descriptors and
// memory stayed flat.
//
// Runs for STOKER_SOAK_SECONDS (default 40) seconds.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "common/naming.h"
#include "daemon/shm/shm_segment.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::Subprocess;

constexpr int kTrainers = 3;
constexpr int kImages = 24;
constexpr int kBatch = 4;
constexpr int kBatchesPerEpoch = kImages / kBatch;

int SoakSeconds() {
  const char* env = std::getenv("STOKER_SOAK_SECONDS");
  return env != nullptr ? std::max(5, std::atoi(env)) : 40;
}

int CountFds(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(
           "/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// Anonymous resident memory (the rings' shared pages are not counted).
long RssAnonKb(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "RssAnon:") {
      status >> value;
      return value;
    }
    status.ignore(1 << 10, '\n');
  }
  return -1;
}

TEST(Soak, TrainersAndTheDaemonKilledAtRandomLoseAndRepeatNothing) {
  testdata::TempDir dir("stoker-soak");
  const std::string socket = dir.path() + "/stoker.sock";
  const std::string target = "unix://" + socket;
  const std::string prefix = SegmentPrefix(socket);
  testing::MakeDataset(dir.path() + "/data", 2, kImages / 2, 32, 24);
  // Even if an assertion ends the test early (the daemon is then killed),
  // nothing of it stays in /dev/shm.
  struct RemoveAtExit {
    std::string prefix;
    ~RemoveAtExit() { RemoveSegments(prefix); }
  } remove_at_exit{prefix};

  int daemon_starts = 0;
  auto start_daemon = [&] {
    auto daemon = std::make_unique<Subprocess>(
        STOKERD_PATH,
        std::vector<std::string>{"--config=", "--socket=" + target,
                                 "--workers=2", "--log_level=warn",
                                 "--keepalive=2s", "--lease_timeout=2s"},
        dir.path() + "/stokerd." + std::to_string(daemon_starts++) + ".log");
    EXPECT_TRUE(testdata::WaitForPath(socket, std::chrono::seconds(10)));
    return daemon;
  };
  auto start_trainer = [&](int i) {
    const std::string name = "trainer" + std::to_string(i);
    return std::make_unique<Subprocess>(
        STOKER_PROBE_PATH,
        std::vector<std::string>{
            "train", "--target=" + target, "--dataset=" + dir.path() + "/data",
            "--log=" + dir.path() + "/" + name + ".log", "--name=" + name,
            "--epochs=100000", "--batch_size=" + std::to_string(kBatch),
            "--seed=" + std::to_string(i + 1), "--step_ms=5"},
        dir.path() + "/" + name + ".err");
  };

  auto daemon = start_daemon();
  std::vector<std::unique_ptr<Subprocess>> trainers;
  for (int i = 0; i < kTrainers; ++i) trainers.push_back(start_trainer(i));

  std::mt19937 rng(12345);
  const auto begin = std::chrono::steady_clock::now();
  const auto end = begin + std::chrono::seconds(SoakSeconds());
  const auto restart_at = begin + (end - begin) / 3;
  bool restarted = false;
  int kills = 0;
  int freezes = 0;
  std::vector<std::pair<int, long>> samples;  // daemon fds, RSS after restart
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::uniform_int_distribution(200, 800)(rng)));
    if (!restarted && std::chrono::steady_clock::now() >= restart_at) {
      daemon->Signal(SIGKILL);
      ASSERT_TRUE(daemon->Wait(std::chrono::seconds(10)).has_value());
      daemon = start_daemon();
      restarted = true;
      continue;
    }
    const int i = std::uniform_int_distribution(0, kTrainers - 1)(rng);
    ASSERT_FALSE(trainers[i]->Wait(std::chrono::milliseconds(0)).has_value())
        << "trainer " << i << " stopped on its own: "
        << testdata::ReadTextFile(dir.path() + "/trainer" + std::to_string(i) +
                                  ".err");
    if (std::uniform_int_distribution(0, 2)(rng) == 0) {
      // Frozen, at times past the keepalive or the lease timeout: what it
      // held goes back to its job, and is void in it once it runs again.
      trainers[i]->Signal(SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::uniform_int_distribution(300, 5000)(rng)));
      trainers[i]->Signal(SIGCONT);
      ++freezes;
      continue;
    }
    trainers[i]->Signal(SIGKILL);
    ASSERT_TRUE(trainers[i]->Wait(std::chrono::seconds(10)).has_value());
    ++kills;
    trainers[i] = start_trainer(i);
    if (restarted)
      samples.emplace_back(CountFds(daemon->pid()), RssAnonKb(daemon->pid()));
  }
  for (int i = 0; i < kTrainers; ++i) {
    auto& trainer = trainers[i];
    EXPECT_FALSE(trainer->Wait(std::chrono::milliseconds(0)).has_value())
        << "trainer " << i << " stopped on its own: "
        << testdata::ReadTextFile(dir.path() + "/trainer" + std::to_string(i) +
                                  ".err");
    trainer->Signal(SIGKILL);
    ASSERT_TRUE(trainer->Wait(std::chrono::seconds(10)).has_value());
  }

  // Every ring belongs to a job the daemon still runs (one per trainer,
  // plus any job a trainer created but was killed before recording).
  auto client = Client::Connect(target);
  ASSERT_TRUE(client.ok()) << client.status();
  auto jobs = (*client)->ListJobs();
  ASSERT_TRUE(jobs.ok());
  size_t running = 0;
  for (const JobInfo& job : *jobs) {
    running += job.state == JobState::kRunning ? 1 : 0;
  }
  const size_t segments = ListSegments(prefix).size();
  EXPECT_EQ(segments, running);

  uint64_t batches = 0;
  int epochs_checked = 0;
  int voided = 0;  // batches taken back from a frozen trainer
  int restarts = 0;
  for (int i = 0; i < kTrainers; ++i) {
    const std::string log_path =
        dir.path() + "/trainer" + std::to_string(i) + ".log";
    const testing::ProbeLog log = testing::ReadProbeLog(log_path);
    {
      std::istringstream lines(testdata::ReadTextFile(log_path));
      for (std::string line; std::getline(lines, line);) {
        voided += line.rfind("void ", 0) == 0 ? 1 : 0;
        restarts += line.rfind("restart ", 0) == 0 ? 1 : 0;
      }
    }
    batches += log.batches.size();
    ASSERT_FALSE(log.batches.empty())
        << "trainer " << i
        << " got nothing: " << testdata::ReadTextFile(log_path);
    std::map<uint64_t, std::map<int64_t, int>> seen;  // epoch -> sample -> n
    uint64_t expected = 0;
    for (const testing::LoggedBatch& b : log.batches) {
      const uint64_t seq = b.epoch * kBatchesPerEpoch + b.index;
      ASSERT_EQ(seq, expected)
          << "trainer " << i << ": batch " << b.epoch << ":" << b.index
          << " follows " << expected - 1 << " (a gap or a repeat)";
      expected = seq + 1;
      for (int64_t s : b.samples) ++seen[b.epoch][s];
    }
    const uint64_t last_epoch = log.batches.back().epoch;
    for (const auto& [epoch, counts] : seen) {
      for (const auto& [sample, n] : counts) {
        EXPECT_EQ(n, 1) << "trainer " << i << " epoch " << epoch << " sample "
                        << sample;
      }
      if (epoch < last_epoch) {
        EXPECT_EQ(counts.size(), static_cast<size_t>(kImages))
            << "trainer " << i << " epoch " << epoch;
        ++epochs_checked;
      }
    }
  }

  // Descriptors and memory flat across the kill cycles of one daemon: after
  // a warm-up (the first quarter of the cycles: allocator arenas and gRPC's
  // per-thread caches fill), nothing may keep growing per cycle.
  ASSERT_GE(samples.size(), 4u);
  const auto [fds_first, rss_first] = samples.front();
  const auto [fds_warm, rss_warm] = samples[samples.size() / 4];
  const auto [fds_last, rss_last] = samples.back();
  EXPECT_LE(fds_last, fds_warm + 4) << "daemon descriptors grew";
#if !defined(STOKER_UNDER_ASAN) && !defined(STOKER_UNDER_TSAN)
  // (Sanitizers keep freed memory in quarantine; there LeakSanitizer is
  // the check.)
  EXPECT_LE(rss_last, rss_warm + 1024) << "daemon memory grew (KiB)";
#endif

  daemon->Signal(SIGTERM);
  const auto exit = daemon->Wait(std::chrono::seconds(20));
  ASSERT_TRUE(exit.has_value());
  // A clean exit (under AddressSanitizer: no leak reported either).
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0)
      << testdata::ReadTextFile(dir.path() + "/stokerd.1.log");
  const size_t leaked = ListSegments(prefix).size();
  EXPECT_EQ(leaked, 0u);
  std::printf(
      "soak: %d s, %d trainer kills, %d freezes (%d batches voided in a "
      "frozen trainer, %d streams ended for good), 1 daemon kill and "
      "restart, %llu batches, "
      "%d complete epochs checked, %zu rings for %zu running jobs, %zu "
      "segments leaked; daemon fds %d -> %d -> %d, RssAnon %ld -> %ld -> %ld "
      "KiB (start, quarter, end of %zu cycles)\n",
      SoakSeconds(), kills, freezes, voided, restarts,
      static_cast<unsigned long long>(batches), epochs_checked, segments,
      running, leaked, fds_first, fds_warm, fds_last, rss_first, rss_warm,
      rss_last, samples.size());
}

}  // namespace
}  // namespace stoker
