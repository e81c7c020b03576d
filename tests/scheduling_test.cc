// The shared worker pool among jobs, and the stall accounting: a real
// in-process stokerd with two workers. These tests compare counts (who got
// how many samples), never speeds.
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_util.h"

// The test utilities (tests/test_util.h) are in this namespace.
namespace stoker::testing {
namespace {

// ANewJobGetsItsFirstBatchPromptly: samples the busy job may decode between
// the new job's trainer waiting and its first batch (4 samples): 0 to 12 in
// 20 runs on 2 cores; a scheduler that let the busy job run on (its ring
// holds 8) would go over it at once.
constexpr uint64_t kPromptBound = 24;

// Shares of the pool can only be compared when the consumers keep up with
// it. Under ThreadSanitizer our code (the consumers, the reactor) runs many
// times slower while the prebuilt decoders do not, so the consumers set the
// shares; those tests are skipped there (they run in the other builds).
#if defined(STOKER_UNDER_TSAN)
#define SKIP_SHARES_UNDER_TSAN() \
  GTEST_SKIP() << "shares are not comparable under ThreadSanitizer"
#else
#define SKIP_SHARES_UNDER_TSAN() (void)0
#endif

class SchedulingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDataset(daemon_.dir() + "/data", 4, 10, 160, 120, false);
    client_ = daemon_.Connect();
  }
  JobSpec Spec(uint32_t weight = 1, uint32_t slots = 2) {
    return {.dataset_path = daemon_.dir() + "/data",
            .batch_size = 4,
            .slots = slots,
            .height = 64,
            .width = 64,
            .epochs = 0,
            .weight = weight};
  }
  // Consumes job `id` flat out until `stop`; counts batches.
  std::thread Consume(const std::string& id, std::atomic<int>* count,
                      std::atomic<bool>* stop) {
    auto consumer = client_->Attach(id);
    EXPECT_TRUE(consumer.ok()) << consumer.status();
    return std::thread(
        [c = std::shared_ptr<Consumer>(*std::move(consumer)), count, stop] {
          while (!stop->load()) {
            if (!c->Next().ok()) return;
            count->fetch_add(1);
          }
        });
  }
  // Runs two jobs' consumers flat out until they received `total` batches
  // together; returns each one's count.
  std::pair<int, int> Race(const std::string& a, const std::string& b,
                           int total) {
    std::atomic<int> count_a{0}, count_b{0};
    std::atomic<bool> stop{false};
    std::thread ta = Consume(a, &count_a, &stop);
    std::thread tb = Consume(b, &count_b, &stop);
    while (count_a.load() + count_b.load() < total) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    const std::pair<int, int> counts{count_a.load(), count_b.load()};
    stop = true;
    ta.join();
    tb.join();
    return counts;
  }

  TestDaemon daemon_{DaemonOptions{.workers = 2}};
  std::unique_ptr<Client> client_;
};

TEST_F(SchedulingTest, TwoEqualJobsShareTheWorkersEqually) {
  SKIP_SHARES_UNDER_TSAN();
  // Rings deep enough to ride out a consumer thread's scheduling hiccups.
  auto a = client_->CreateJob(Spec(1, 8));
  auto b = client_->CreateJob(Spec(1, 8));
  ASSERT_TRUE(a.ok() && b.ok());
  const auto [na, nb] = Race(a->id, b->id, 300);
  EXPECT_GT(na, 0);
  EXPECT_NEAR(static_cast<double>(na) / nb, 1.0, 0.15)
      << na << " vs " << nb << " batches";
}

// Counted by the daemon while both jobs have room to fill (rings of 512
// samples, no consumer): the scheduler's share alone. (A race of two
// consumers measured the consumers too: 2.37:1 on a loaded machine, whose
// test threads did not keep up.)
TEST_F(SchedulingTest, WeightsSplitTheWorkersInProportion) {
  auto heavy = client_->CreateJob(Spec(3, 128));
  auto light = client_->CreateJob(Spec(1, 128));
  ASSERT_TRUE(heavy.ok() && light.ok());
  // Samples decoded, once the two of them reach `total`.
  auto decoded = [&](uint64_t total) {
    std::pair<uint64_t, uint64_t> n;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    do {
      n = {JobStatsOf(*client_, heavy->id)->samples_decoded,
           JobStatsOf(*client_, light->id)->samples_decoded};
    } while (n.first + n.second < total &&
             std::chrono::steady_clock::now() < deadline);
    return n;
  };
  const auto first = decoded(40);  // both under way: no head start counts
  const auto last = decoded(400);  // the heavy ring (512) is not full yet
  const double nh = double(last.first - first.first);
  const double nl = double(last.second - first.second);
  EXPECT_NEAR(nh / nl, 3.0, 0.6) << nh << " vs " << nl << " samples";
}

TEST_F(SchedulingTest, AStalledConsumerDoesNotHoldBackAnotherJob) {
  JobSpec stalled_spec = Spec();
  stalled_spec.epochs = 0;
  auto stalled = client_->CreateJob(stalled_spec);
  JobSpec running_spec = Spec();
  running_spec.epochs = 3;
  auto running = client_->CreateJob(running_spec);
  ASSERT_TRUE(stalled.ok() && running.ok());
  // The stalled job's consumer takes one batch and sits on it.
  auto sitter = client_->Attach(stalled->id, {.prefetch = 1});
  ASSERT_TRUE(sitter.ok());
  auto held = (*sitter)->Next();
  ASSERT_TRUE(held.ok());
  auto consumer = client_->Attach(running->id);
  ASSERT_TRUE(consumer.ok());
  int batches = 0;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    ASSERT_TRUE(batch.ok()) << batch.status();
    ++batches;
  }
  EXPECT_EQ(batches, 30);  // 3 epochs of 40 images in batches of 4
  // Backpressure: the stalled job got no more work than its ring holds
  // (the batch it sits on, one prefetched for it, and its other slot).
  auto stats = JobStatsOf(*client_, stalled->id);
  ASSERT_TRUE(stats.has_value());
  EXPECT_LE(stats->samples_decoded, 3u * 4);
}

TEST_F(SchedulingTest, ANewJobGetsItsFirstBatchPromptly) {
  SKIP_SHARES_UNDER_TSAN();
  auto busy = client_->CreateJob(Spec());
  ASSERT_TRUE(busy.ok());
  std::atomic<int> count{0};
  std::atomic<bool> stop{false};
  std::thread t = Consume(busy->id, &count, &stop);
  while (count.load() < 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Counted from the moment the new job's trainer waits for its first
  // batch (the time its dataset scan takes is not the scheduler's). Until
  // then the new job only prefetches, and the busy job, whose consumer
  // waits, may lawfully run up to the waiting bonus (20 ms of worker time)
  // ahead of it: a number of samples that depends on the machine's speed.
  // Exact sequences are FairSchedulerTest's.
  auto fresh = client_->CreateJob(Spec());
  ASSERT_TRUE(fresh.ok());
  auto consumer = client_->Attach(fresh->id);
  ASSERT_TRUE(consumer.ok());
  const uint64_t before = JobStatsOf(*client_, busy->id)->samples_decoded;
  ASSERT_TRUE((*consumer)->Next().ok());
  const uint64_t after = JobStatsOf(*client_, busy->id)->samples_decoded;
  stop = true;
  t.join();
  // While the new job's first 4 samples were decoded the busy job got
  // about as many, not a ring's worth of batches first.
  EXPECT_LE(after - before, kPromptBound)
      << "the busy job decoded " << after - before
      << " samples before the new job's first batch";
}

TEST_F(SchedulingTest, StallAccountingSeesAnInputBoundAndAComputeBoundTrainer) {
  // Input-bound: a trainer that does nothing between batches waits for the
  // decoder nearly all the time.
  auto job = client_->CreateJob(Spec());
  ASSERT_TRUE(job.ok());
  {
    auto consumer = client_->Attach(job->id, {.name = "greedy"});
    ASSERT_TRUE(consumer.ok());
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
      ASSERT_TRUE((*consumer)->Next().ok());
    }
    const InputStats input = (*consumer)->input_stats();
    EXPECT_GT(input.batches, 10u);
    EXPECT_GT(input.input_bound_percent, 60)
        << input.wait_seconds << " s waiting, " << input.step_seconds
        << " s stepping";
    // The daemon heard about it (reports go about once a second).
    auto stats = JobStatsOf(*client_, job->id);
    ASSERT_TRUE(stats.has_value());
    ASSERT_EQ(stats->consumer.size(), 1u);
    EXPECT_EQ(stats->consumer[0].name, "greedy");
    EXPECT_GT(stats->consumer[0].input_bound_percent, 60);
    EXPECT_GT(stats->decoded_per_second, 0);
    auto daemon_stats = client_->GetStats();
    EXPECT_GT(daemon_stats->worker_busy_percent, 0);
    EXPECT_LE(daemon_stats->worker_busy_percent, 100);
    EXPECT_GT(daemon_stats->decoded_per_second, 0);
  }
  // Compute-bound: a trainer that works 40 ms per batch of 4 small images
  // finds every batch ready.
  auto slow_job = client_->CreateJob(Spec());
  ASSERT_TRUE(slow_job.ok());
  auto consumer = client_->Attach(slow_job->id, {.name = "thinker"});
  ASSERT_TRUE(consumer.ok());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE((*consumer)->Next().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  const InputStats input = (*consumer)->input_stats();
  EXPECT_LT(input.recent_input_bound_percent, 25);
  auto stats = JobStatsOf(*client_, slow_job->id);
  ASSERT_TRUE(stats.has_value());
  EXPECT_GE(stats->consumer[0].input_bound_percent, 0);
  EXPECT_LT(stats->consumer[0].input_bound_percent, 25);
  EXPECT_NEAR(stats->ring_occupancy_percent, 100, 0.1);  // ring kept full
}

}  // namespace
}  // namespace stoker::testing
