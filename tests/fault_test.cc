// Faults injected for real: consumer processes killed with SIGKILL or frozen
// with SIGSTOP while they hold batches, a consumer that hangs holding
// leases, and stokerd itself killed and restarted under a consuming trainer.
// Each test proves that no batch is lost or handed out twice.
#include <signal.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "common/naming.h"
#include "daemon/shm/shm_segment.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::Subprocess;
using testing::Eventually;
using testing::ProbeLog;
using testing::ReadProbeLog;
using testing::TestDaemon;

constexpr int kImages = 20;  // 2 classes x 10
constexpr uint32_t kBatch = 2;
constexpr uint64_t kBatches = kImages / kBatch;

JobSpec PartitionSpec(const std::string& data) {
  return {.dataset_path = data,
          .batch_size = kBatch,
          .slots = 4,
          .height = 16,
          .width = 16,
          .epochs = 1,
          .sharing = {.mode = ConsumerMode::kPartition}};
}

// A stoker_probe consumer in its own process.
std::unique_ptr<Subprocess> StartProbe(const TestDaemon& daemon,
                                       const std::string& job,
                                       const std::string& name, int take,
                                       int release) {
  const std::string log = daemon.dir() + "/" + name + ".log";
  auto probe = std::make_unique<Subprocess>(
      STOKER_PROBE_PATH,
      std::vector<std::string>{
          "consume", "--target=" + daemon.target(), "--job=" + job,
          "--name=" + name, "--take=" + std::to_string(take),
          "--release=" + std::to_string(release), "--log=" + log},
      daemon.dir() + "/" + name + ".err");
  EXPECT_TRUE(Eventually([&] { return ReadProbeLog(log).ready; }))
      << testdata::ReadTextFile(daemon.dir() + "/" + name + ".err");
  return probe;
}

// Receives until the end of the job; every batch is released at once.
std::vector<uint64_t> Drain(Consumer& consumer, std::vector<int64_t>* samples,
                            absl::Status* end) {
  std::vector<uint64_t> seqs;
  for (;;) {
    auto batch = consumer.Next();
    if (!batch.ok()) {
      *end = batch.status();
      return seqs;
    }
    seqs.push_back(batch->epoch() * kBatches + batch->index());
    for (int64_t i : batch->indices()) samples->push_back(i);
  }
}

// Every dataset index exactly once.
void ExpectEachSampleOnce(const std::vector<int64_t>& samples) {
  std::map<int64_t, int> seen;
  for (int64_t i : samples) ++seen[i];
  EXPECT_EQ(samples.size(), static_cast<size_t>(kImages));
  EXPECT_EQ(seen.size(), static_cast<size_t>(kImages));
  for (const auto& [index, count] : seen) {
    EXPECT_EQ(count, 1) << "sample " << index;
  }
}

// A new consumer of partition job `job_id` receives every batch of it,
// each sample exactly once, and then the end of the job.
void ExpectAnotherConsumerGetsEverything(Client& client,
                                         const std::string& job_id) {
  auto b = client.Attach(job_id, {.prefetch = 1, .name = "b"});
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<int64_t> samples;
  absl::Status end;
  const std::vector<uint64_t> got = Drain(**b, &samples, &end);
  EXPECT_TRUE(absl::IsOutOfRange(end)) << end;
  EXPECT_EQ(got.size(), kBatches);
  ExpectEachSampleOnce(samples);
}

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::MakeDataset(data_dir_.path() + "/data", 2, kImages / 2, 32, 24);
  }
  std::string data() const { return data_dir_.path() + "/data"; }
  testdata::TempDir data_dir_{"stoker-fault"};
};

TEST_F(FaultTest, AKilledPartitionConsumersUnreleasedBatchesGoToAnother) {
  TestDaemon daemon;
  auto client = daemon.Connect();
  auto job = client->CreateJob(PartitionSpec(data()));
  ASSERT_TRUE(job.ok()) << job.status();
  // A takes three batches, releases the first, holds two; then dies.
  auto a = StartProbe(daemon, job->id, "a", 3, 1);
  auto b = client->Attach(job->id, {.prefetch = 1, .name = "b"});
  ASSERT_TRUE(b.ok()) << b.status();
  a->Signal(SIGKILL);
  ASSERT_TRUE(a->Wait(std::chrono::seconds(10)).has_value());

  std::vector<int64_t> samples;
  absl::Status end;
  const std::vector<uint64_t> got = Drain(**b, &samples, &end);
  EXPECT_TRUE(absl::IsOutOfRange(end)) << end;
  const ProbeLog log = ReadProbeLog(daemon.dir() + "/a.log");
  ASSERT_EQ(log.batches.size(), 3u);
  // Released by A: consumed. Held by A: delivered again, to B.
  samples.insert(samples.end(), log.batches[0].samples.begin(),
                 log.batches[0].samples.end());
  ExpectEachSampleOnce(samples);
  std::set<uint64_t> b_got(got.begin(), got.end());
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(
        b_got.count(log.batches[i].epoch * kBatches + log.batches[i].index), 1u)
        << "batch A held was not redelivered";
  }
  EXPECT_EQ(got.size(), kBatches - 1);
}

TEST_F(FaultTest, AKilledExclusiveConsumersSuccessorResumesAtItsPosition) {
  TestDaemon daemon;
  auto client = daemon.Connect();
  JobSpec spec = PartitionSpec(data());
  spec.sharing = {};
  auto job = client->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto a = StartProbe(daemon, job->id, "a", 4, 3);
  a->Signal(SIGKILL);
  ASSERT_TRUE(a->Wait(std::chrono::seconds(10)).has_value());
  // The stream broke: the job is free again, its lease reclaimed.
  ASSERT_TRUE(Eventually([&] {
    auto stats = testing::JobStatsOf(*client, job->id);
    return stats && stats->consumers == 0;
  }));
  auto b = client->Attach(job->id, {.prefetch = 1, .name = "b"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->position().epoch, 0u);
  EXPECT_EQ((*b)->position().batch, 3u);
  std::vector<int64_t> samples;
  absl::Status end;
  const std::vector<uint64_t> got = Drain(**b, &samples, &end);
  EXPECT_TRUE(absl::IsOutOfRange(end)) << end;
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), 3u) << "the batch A held comes first";
  const ProbeLog log = ReadProbeLog(daemon.dir() + "/a.log");
  for (int i = 0; i < 3; ++i) {
    samples.insert(samples.end(), log.batches[i].samples.begin(),
                   log.batches[i].samples.end());
  }
  ExpectEachSampleOnce(samples);
}

TEST_F(FaultTest, AConsumerHoldingABatchPastTheLeaseLimitIsEnded) {
  TestDaemon daemon({.lease_timeout = absl::Seconds(1)});
  auto client = daemon.Connect();
  auto job = client->CreateJob(PartitionSpec(data()));
  ASSERT_TRUE(job.ok()) << job.status();
  auto hung = client->Attach(job->id, {.prefetch = 2, .name = "hung"});
  ASSERT_TRUE(hung.ok());
  auto held1 = (*hung)->Next();
  auto held2 = (*hung)->Next();
  ASSERT_TRUE(held1.ok() && held2.ok());
  // `hung` keeps its stream open and never releases; the other consumer
  // still gets every batch, the two held ones once their lease expired.
  ExpectAnotherConsumerGetsEverything(*client, job->id);
  // What it had prefetched went with its leases; once the stream's end has
  // arrived, that is all it gets, and it says why.
  absl::Status ended = (*hung)->Next().status();
  while (ended.ok()) ended = (*hung)->Next().status();
  EXPECT_EQ(ended.code(), absl::StatusCode::kDeadlineExceeded) << ended;
  EXPECT_NE(ended.message().find("--lease_timeout"), std::string::npos)
      << ended;
}

TEST_F(FaultTest, AFrozenConsumerIsCaughtByKeepalive) {
  TestDaemon daemon({.lease_timeout = absl::ZeroDuration(),
                     .keepalive = absl::Milliseconds(500)});
  auto client = daemon.Connect();
  auto job = client->CreateJob(PartitionSpec(data()));
  ASSERT_TRUE(job.ok()) << job.status();
  auto a = StartProbe(daemon, job->id, "a", 2, 0);
  a->Signal(SIGSTOP);  // alive, socket open, answers nothing
  ExpectAnotherConsumerGetsEverything(*client, job->id);
  a->Signal(SIGKILL);
}

TEST_F(FaultTest, TheSdkResumesThroughADaemonKilledAndRestarted) {
  testdata::TempDir dir("stoker-restart");
  const std::string socket = dir.path() + "/stoker.sock";
  const std::string target = "unix://" + socket;
  const std::string prefix = SegmentPrefix(socket);
  // Even if an assertion ends the test early (the daemon is then killed),
  // nothing of it stays in /dev/shm.
  struct RemoveAtExit {
    std::string prefix;
    ~RemoveAtExit() { RemoveSegments(prefix); }
  } remove_at_exit{prefix};
  auto start = [&](const std::string& log) {
    auto daemon = std::make_unique<Subprocess>(
        STOKERD_PATH,
        std::vector<std::string>{"--config=", "--socket=" + target,
                                 "--workers=2"},
        dir.path() + "/" + log);
    EXPECT_TRUE(testdata::WaitForPath(socket, std::chrono::seconds(10)));
    return daemon;
  };
  auto daemon = start("first.log");
  auto client = Client::Connect(target);
  ASSERT_TRUE(client.ok()) << client.status();
  JobSpec spec = PartitionSpec(data());
  spec.sharing = {};
  spec.epochs = 2;
  auto job = (*client)->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = (*client)->Attach(job->id, {.prefetch = 2});
  ASSERT_TRUE(consumer.ok());
  std::map<uint64_t, std::vector<int64_t>> by_epoch;
  std::set<uint64_t> seqs;
  auto take = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto batch = (*consumer)->Next();
      if (!batch.ok()) return batch.status();
      EXPECT_TRUE(
          seqs.insert(batch->epoch() * kBatches + batch->index()).second)
          << "batch " << batch->epoch() << ":" << batch->index() << " twice";
      for (int64_t s : batch->indices()) by_epoch[batch->epoch()].push_back(s);
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(take(7).ok());
  daemon->Signal(SIGKILL);
  ASSERT_TRUE(daemon->Wait(std::chrono::seconds(10)).has_value());
  EXPECT_FALSE(ListSegments(prefix).empty()) << "the killed daemon's ring";
  daemon = start("second.log");
  // Next() reconnects, finds the job gone, creates it again at the
  // position and goes on: nothing lost, nothing twice.
  ASSERT_TRUE(take(2 * kBatches - 7).ok());
  EXPECT_TRUE(absl::IsOutOfRange((*consumer)->Next().status()));
  EXPECT_NE((*consumer)->job().id, job->id);
  for (const auto& [epoch, samples] : by_epoch) ExpectEachSampleOnce(samples);
  EXPECT_EQ(by_epoch.size(), 2u);
  daemon->Signal(SIGTERM);
  ASSERT_TRUE(daemon->Wait(std::chrono::seconds(20)).has_value());
  const std::string log = testdata::ReadTextFile(dir.path() + "/second.log");
  EXPECT_NE(log.find("removed 1 shared-memory segments"), std::string::npos)
      << log;
  EXPECT_TRUE(ListSegments(prefix).empty());
}

}  // namespace
}  // namespace stoker
