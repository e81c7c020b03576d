// Trainers frozen with SIGSTOP in the middle of a step, for longer than the
// keepalive or the lease timeout, in exclusive, partition and broadcast
// jobs, then resumed with SIGCONT. Each trainer (stoker_probe step) confirms
// every batch after its step and logs what it used. However long the
// freeze, no batch is used twice, the daemon's batches reach the others,
// and the frozen trainer learns the daemon's real reason.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::Subprocess;
using testing::Eventually;
using testing::TestDaemon;

constexpr uint64_t kBatches = 12;  // 24 images, 2 per batch, one epoch

enum class Cause { kKeepalive, kLeaseTimeout };

// What a stoker_probe step trainer logged.
struct StepLog {
  std::vector<uint64_t> got;
  std::vector<uint64_t> used;
  std::map<uint64_t, std::string> void_why;  // batch -> "<CODE> <message>"
  std::string next;                          // why Next() ended it
};

StepLog ReadStepLog(const std::string& path) {
  StepLog log;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> w = absl::StrSplit(line, ' ');
    if (w[0] == "next") {
      log.next = line.substr(5);
    } else if (w.size() >= 3) {
      const uint64_t batch = std::stoull(w[2]);  // one epoch
      if (w[0] == "got") log.got.push_back(batch);
      if (w[0] == "used") log.used.push_back(batch);
      if (w[0] == "void") {
        log.void_why[batch] =
            line.substr(w[0].size() + w[1].size() + w[2].size() + 3);
      }
    }
  }
  return log;
}

class FreezeTest
    : public ::testing::TestWithParam<std::tuple<ConsumerMode, Cause>> {
 protected:
  static DaemonOptions Options(Cause cause) {
    DaemonOptions options;
    options.workers = 2;
    if (cause == Cause::kKeepalive) {
      options.keepalive = absl::Seconds(1);
      options.lease_timeout = absl::Minutes(10);
    } else {
      options.keepalive = absl::Seconds(30);
      options.lease_timeout = absl::Seconds(2);
    }
    return options;
  }

  std::unique_ptr<Subprocess> StartTrainer(const TestDaemon& daemon,
                                           const std::string& job,
                                           const std::string& name,
                                           int step_ms) {
    return std::make_unique<Subprocess>(
        STOKER_PROBE_PATH,
        std::vector<std::string>{"step", "--target=" + daemon.target(),
                                 "--job=" + job, "--name=" + name,
                                 "--log=" + Log(daemon, name),
                                 "--step_ms=" + std::to_string(step_ms)},
        daemon.dir() + "/" + name + ".err");
  }
  static std::string Log(const TestDaemon& daemon, const std::string& name) {
    return daemon.dir() + "/" + name + ".log";
  }
  static bool Attached(Client& client, const std::string& job,
                       const std::string& name) {
    auto stats = testing::JobStatsOf(client, job);
    if (!stats) return false;
    for (const ConsumerStats& c : stats->consumer) {
      if (c.name == name) return true;
    }
    return false;
  }
};

TEST_P(FreezeTest, AFrozenTrainerNeverUsesABatchTwiceAndHearsWhy) {
  const auto [mode, cause] = GetParam();
  TestDaemon daemon(Options(cause));
  testing::MakeDataset(daemon.dir() + "/data", 2, kBatches, 32, 24);
  auto client = daemon.Connect();
  JobSpec spec{.dataset_path = daemon.dir() + "/data",
               .batch_size = 2,
               .slots = mode == ConsumerMode::kBroadcast ? 16u : 4u,
               .height = 16,
               .width = 16,
               .epochs = 1,
               .sharing = {.mode = mode}};
  if (mode == ConsumerMode::kBroadcast) spec.sharing.min_consumers = 2;
  auto job = client->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();

  auto frozen = StartTrainer(daemon, job->id, "frozen", 300);
  std::unique_ptr<Subprocess> other;
  if (mode != ConsumerMode::kExclusive) {
    other = StartTrainer(daemon, job->id, "other", 20);
  }
  // Stopped in the middle of its step on its first batch.
  ASSERT_TRUE(Eventually([&] {
    return !ReadStepLog(Log(daemon, "frozen")).got.empty();
  })) << testdata::ReadTextFile(daemon.dir() + "/frozen.err");
  frozen->Signal(SIGSTOP);
  const uint64_t held = ReadStepLog(Log(daemon, "frozen")).got.back();
  // The daemon lets it go (its connection stops answering, or its lease
  // runs out) while it cannot run at all.
  ASSERT_TRUE(
      Eventually([&] { return !Attached(*client, job->id, "frozen"); }));
  if (mode == ConsumerMode::kExclusive) {
    other = StartTrainer(daemon, job->id, "other", 20);
  }
  ASSERT_TRUE(Eventually([&] {
    return !ReadStepLog(Log(daemon, "other")).next.empty();
  })) << testdata::ReadTextFile(daemon.dir() + "/other.err");
  frozen->Signal(SIGCONT);
  ASSERT_TRUE(frozen->Wait(std::chrono::seconds(20)).has_value());

  const StepLog a = ReadStepLog(Log(daemon, "frozen"));
  const StepLog b = ReadStepLog(Log(daemon, "other"));
  EXPECT_TRUE(absl::StartsWith(b.next, "OUT_OF_RANGE")) << b.next;
  // The batch it held when it stopped is void in it, for the real reason,
  // and Next() says the same: never a clean end.
  const auto [code, says] =
      cause == Cause::kKeepalive
          ? std::pair<std::string, std::string>{"UNAVAILABLE", "keepalive: "}
          : std::pair<std::string, std::string>{
                "DEADLINE_EXCEEDED", absl::StrCat("held batch 0:", held)};
  ASSERT_TRUE(a.void_why.contains(held))
      << testdata::ReadTextFile(Log(daemon, "frozen"));
  EXPECT_TRUE(absl::StartsWith(a.void_why.at(held), code + " "))
      << a.void_why.at(held);
  EXPECT_TRUE(absl::StrContains(a.void_why.at(held), says))
      << a.void_why.at(held);
  std::printf("frozen on batch %llu: %s\nthen Next(): %s\n",
              static_cast<unsigned long long>(held),
              a.void_why.at(held).c_str(), a.next.c_str());
  EXPECT_TRUE(absl::StartsWith(a.next, code + " ")) << a.next;
  EXPECT_TRUE(absl::StrContains(a.next, says)) << a.next;

  // Nobody used a batch twice; the others received what it lost.
  std::map<uint64_t, int> uses;
  for (uint64_t batch : a.used) ++uses[batch];
  if (mode == ConsumerMode::kBroadcast) {
    for (const auto& [batch, n] : uses) EXPECT_EQ(n, 1) << "batch " << batch;
    EXPECT_FALSE(uses.contains(held));
    uses.clear();
  }
  for (uint64_t batch : b.used) ++uses[batch];
  EXPECT_EQ(uses.size(), kBatches);
  for (const auto& [batch, n] : uses) EXPECT_EQ(n, 1) << "batch " << batch;
  EXPECT_TRUE(b.void_why.empty());
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndCauses, FreezeTest,
    ::testing::Combine(
        ::testing::Values(ConsumerMode::kExclusive, ConsumerMode::kPartition,
                          ConsumerMode::kBroadcast),
        ::testing::Values(Cause::kKeepalive, Cause::kLeaseTimeout)),
    [](const auto& info) {
      const ConsumerMode mode = std::get<0>(info.param);
      return std::string(mode == ConsumerMode::kExclusive   ? "Exclusive"
                         : mode == ConsumerMode::kPartition ? "Partition"
                                                            : "Broadcast") +
             (std::get<1>(info.param) == Cause::kKeepalive ? "Keepalive"
                                                           : "LeaseTimeout");
    });

}  // namespace
}  // namespace stoker
