// Rejoin soak: a broadcast job with a small ring (4 slots, max_lag 3), three
// consumers that keep pace, and a trainer process that is killed at random
// and attaches again, for STOKER_REJOIN_SECONDS (default 12). Nobody that
// keeps pace may be evicted: not the three, and not the rejoiner, which
// starts where the most advanced consumer stands and keeps pace too.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::Subprocess;
using testing::TestDaemon;

int RejoinSeconds() {
  const char* env = std::getenv("STOKER_REJOIN_SECONDS");
  return env != nullptr ? std::max(3, std::atoi(env)) : 12;
}

// Receives, steps, confirms and releases until `stop`; returns how it ended
// (OK when stopped) and the batches it used, in order.
absl::Status KeepPace(Client& client, const std::string& job,
                      const std::string& name, const std::atomic<bool>& stop,
                      std::vector<uint64_t>* used, uint64_t per_epoch) {
  auto consumer = client.Attach(job, {.prefetch = 2, .name = name});
  if (!consumer.ok()) return consumer.status();
  while (!stop) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) return batch.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // its step
    if (absl::Status intact = batch->CheckIntact(); !intact.ok()) {
      return intact;
    }
    used->push_back(batch->epoch() * per_epoch + batch->index());
  }
  return absl::OkStatus();
}

TEST(RejoinSoak, BroadcastRejoinersNeverEvictConsumersThatKeepPace) {
  TestDaemon daemon;
  testing::MakeDataset(daemon.dir() + "/data", 2, 16, 32, 24);
  auto client = daemon.Connect();
  auto job = client->CreateJob({.dataset_path = daemon.dir() + "/data",
                                .batch_size = 2,
                                .slots = 4,
                                .height = 16,
                                .width = 16,
                                .epochs = 0,  // until deleted
                                .sharing = {.mode = ConsumerMode::kBroadcast}});
  ASSERT_TRUE(job.ok()) << job.status();
  const uint64_t per_epoch = job->batches_per_epoch;

  constexpr int kSteady = 3;
  std::atomic<bool> stop{false};
  std::vector<std::vector<uint64_t>> used(kSteady);
  std::vector<absl::Status> ended(kSteady);
  std::vector<std::thread> steady;
  for (int i = 0; i < kSteady; ++i) {
    steady.emplace_back([&, i] {
      auto own = daemon.Connect();
      ended[i] = KeepPace(*own, job->id, "steady" + std::to_string(i), stop,
                          &used[i], per_epoch);
    });
  }

  std::mt19937 rng(7);
  int rejoins = 0;
  std::vector<std::string> logs;
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::seconds(RejoinSeconds());
  while (std::chrono::steady_clock::now() < end) {
    const std::string log =
        daemon.dir() + "/rejoiner" + std::to_string(rejoins) + ".log";
    Subprocess rejoiner(
        STOKER_PROBE_PATH,
        {"step", "--target=" + daemon.target(), "--job=" + job->id,
         "--name=rejoiner", "--log=" + log, "--step_ms=10", "--prefetch=2"},
        daemon.dir() + "/rejoiner.err");
    logs.push_back(log);
    ++rejoins;
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::uniform_int_distribution(100, 700)(rng)));
    rejoiner.Signal(SIGKILL);
    ASSERT_TRUE(rejoiner.Wait(std::chrono::seconds(10)).has_value());
  }
  stop = true;
  for (std::thread& t : steady) t.join();

  uint64_t batches = 0;
  for (int i = 0; i < kSteady; ++i) {
    EXPECT_TRUE(ended[i].ok()) << "steady" << i << ": " << ended[i];
    ASSERT_FALSE(used[i].empty());
    for (size_t k = 1; k < used[i].size(); ++k) {
      ASSERT_EQ(used[i][k], used[i][k - 1] + 1)
          << "steady" << i << " skipped or repeated a batch";
    }
    batches += used[i].size();
  }
  // A rejoiner ends only by its kill: a "next" line would be an eviction.
  int rejoiner_batches = 0;
  for (const std::string& path : logs) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      EXPECT_FALSE(absl::StartsWith(line, "next ") ||
                   absl::StartsWith(line, "void "))
          << path << ": " << line;
      rejoiner_batches += absl::StartsWith(line, "used ") ? 1 : 0;
    }
  }
  EXPECT_GT(rejoiner_batches, 0);
  std::printf(
      "rejoin soak: %d s, %d rejoins (SIGKILL), %d steady consumers used "
      "%llu batches, the rejoiners %d; no eviction\n",
      RejoinSeconds(), rejoins, kSteady,
      static_cast<unsigned long long>(batches), rejoiner_batches);
  EXPECT_TRUE(client->DeleteJob(job->id).ok());
}

}  // namespace
}  // namespace stoker
