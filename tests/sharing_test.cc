// Several consumers and several jobs on one daemon: broadcast, partition,
// fair scheduling, limits, the shared-memory budget and stall accounting.
// A real in-process stokerd, real sockets and real shared memory.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_util.h"

// The test utilities (tests/test_util.h) are in this namespace.
namespace stoker::testing {
namespace {

struct Got {
  uint64_t seq;
  std::vector<int64_t> indices;
  uint64_t checksum;
};

uint64_t Checksum(const Batch& batch) {
  const auto images = batch.images();
  return std::accumulate(images.data(), images.data() + images.size(),
                         uint64_t{0});
}

// Consumes until the stream ends (or `limit` batches); returns the status
// that ended it.
absl::Status Drain(Consumer& consumer, uint64_t per_epoch,
                   std::vector<Got>* got, size_t limit = SIZE_MAX) {
  while (got->size() < limit) {
    absl::StatusOr<Batch> batch = consumer.Next();
    if (!batch.ok()) return batch.status();
    got->push_back({batch->epoch() * per_epoch + batch->index(),
                    {batch->indices().begin(), batch->indices().end()},
                    Checksum(*batch)});
    if (absl::Status intact = batch->CheckIntact(); !intact.ok()) return intact;
  }
  return absl::OkStatus();
}

class SharingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MakeDataset(daemon_.dir() + "/data", 3, 10);  // 30 images
    client_ = daemon_.Connect();
  }
  // Broadcast to two consumers, one of which will lag.
  static Sharing Laggard(LagPolicy on_lag) {
    return {.mode = ConsumerMode::kBroadcast,
            .max_lag = 2,
            .on_lag = on_lag,
            .min_consumers = 2};
  }
  // A consumer that reads at once, and one that prefetches a single batch.
  std::pair<absl::StatusOr<std::unique_ptr<Consumer>>,
            absl::StatusOr<std::unique_ptr<Consumer>>>
  FastAndSlow(const std::string& job_id) {
    return {client_->Attach(job_id, {.name = "fast"}),
            client_->Attach(job_id, {.prefetch = 1, .name = "slow"})};
  }
  // 30 images in batches of 5: 6 batches per epoch.
  JobSpec Spec() {
    return {.dataset_path = daemon_.dir() + "/data",
            .batch_size = 5,
            .slots = 4,
            .height = 24,
            .width = 32,
            .seed = 3,
            .epochs = 2};
  }

  TestDaemon daemon_{DaemonOptions{.workers = 2}};
  std::unique_ptr<Client> client_;
};

TEST_F(SharingTest, BroadcastDeliversEveryBatchToEveryConsumerDecodedOnce) {
  JobSpec spec = Spec();
  // A ring deeper than the whole job: however the threads are scheduled,
  // no consumer can fall behind far enough to be dropped.
  spec.slots = 16;
  spec.sharing = {.mode = ConsumerMode::kBroadcast, .min_consumers = 3};
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int i = 0; i < 3; ++i) {
    auto consumer = client_->Attach(job->id, {.name = "c" + std::to_string(i)});
    ASSERT_TRUE(consumer.ok()) << consumer.status();
    consumers.push_back(*std::move(consumer));
  }
  std::vector<std::vector<Got>> got(3);
  std::vector<absl::Status> ended(3);
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      ended[i] = Drain(*consumers[i], job->batches_per_epoch, &got[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ended[i].code(), absl::StatusCode::kOutOfRange) << ended[i];
    ASSERT_EQ(got[i].size(), 12u) << "consumer " << i;
    for (size_t b = 0; b < got[i].size(); ++b) {
      EXPECT_EQ(got[i][b].seq, b);
      EXPECT_EQ(got[i][b].indices, got[0][b].indices);
      EXPECT_EQ(got[i][b].checksum, got[0][b].checksum);
    }
  }
  // Decoded once, delivered three times.
  ASSERT_TRUE(Eventually([&] {
    auto s = JobStatsOf(*client_, job->id);
    return s && s->state == JobState::kFinished;
  }));
  auto stats = JobStatsOf(*client_, job->id);
  EXPECT_EQ(stats->samples_decoded, 60u);
  EXPECT_EQ(stats->batches_delivered, 36u);
  EXPECT_EQ(stats->mode, ConsumerMode::kBroadcast);
}

TEST_F(SharingTest, BroadcastLaggardIsDetachedAndTheOthersFinish) {
  JobSpec spec = Spec();
  spec.sharing = Laggard(LagPolicy::kDetach);
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto [fast, slow] = FastAndSlow(job->id);
  ASSERT_TRUE(fast.ok() && slow.ok());
  // The slow consumer never asks for a batch: the fast one must still get
  // every batch, and the slow one is told why it was dropped.
  std::vector<Got> got;
  const absl::Status ended = Drain(**fast, job->batches_per_epoch, &got);
  EXPECT_EQ(ended.code(), absl::StatusCode::kOutOfRange) << ended;
  ASSERT_EQ(got.size(), 12u);
  for (size_t b = 0; b < got.size(); ++b) EXPECT_EQ(got[b].seq, b);
  absl::Status slow_status;
  for (int i = 0;
       i < 5 && slow_status.code() != absl::StatusCode::kResourceExhausted;
       ++i) {
    slow_status = (*slow)->Next().status();
  }
  EXPECT_EQ(slow_status.code(), absl::StatusCode::kResourceExhausted)
      << slow_status;
  EXPECT_NE(slow_status.message().find("max_lag 2"), std::string::npos)
      << slow_status;
  EXPECT_NE(slow_status.message().find("'slow'"), std::string::npos);
}

TEST_F(SharingTest, BroadcastSkipMovesTheLaggardAheadWithoutHoldingOthers) {
  JobSpec spec = Spec();
  spec.slots = 6;
  spec.sharing = Laggard(LagPolicy::kSkip);
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto [fast, slow] = FastAndSlow(job->id);
  ASSERT_TRUE(fast.ok() && slow.ok());
  std::vector<Got> slow_got;
  ASSERT_TRUE(Drain(**slow, job->batches_per_epoch, &slow_got, 1).ok());
  // The slow one pauses; the fast one runs to the end.
  std::vector<Got> fast_got;
  EXPECT_EQ(Drain(**fast, job->batches_per_epoch, &fast_got).code(),
            absl::StatusCode::kOutOfRange);
  ASSERT_EQ(fast_got.size(), 12u);
  auto mid = JobStatsOf(*client_, job->id);
  ASSERT_TRUE(mid.has_value());
  ASSERT_EQ(mid->consumer.size(), 2u);
  const ConsumerStats& lagging = mid->consumer[1];
  EXPECT_EQ(lagging.name, "slow");
  EXPECT_GT(lagging.batches_skipped, 0u);
  // Beyond max_lag (2) for at most the grace period, and never beyond what
  // the ring holds.
  EXPECT_LE(lagging.lag, spec.slots);
  // It resumes: what it receives is in order, and with what it skipped
  // accounts for every batch exactly once.
  EXPECT_EQ(Drain(**slow, job->batches_per_epoch, &slow_got).code(),
            absl::StatusCode::kOutOfRange);
  for (size_t i = 1; i < slow_got.size(); ++i) {
    EXPECT_GT(slow_got[i].seq, slow_got[i - 1].seq);
    EXPECT_EQ(slow_got[i].indices, fast_got[slow_got[i].seq].indices);
  }
  auto end = JobStatsOf(*client_, job->id);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(
      end->consumer[1].batches_delivered + end->consumer[1].batches_skipped,
      12u);
  EXPECT_EQ(end->consumer[1].batches_delivered, slow_got.size());
  // What it skipped counts as behind it: its position is the end.
  const Position past_the_end{12 / job->batches_per_epoch,
                              12 % job->batches_per_epoch};
  EXPECT_EQ((*slow)->position(), past_the_end);
}

TEST_F(SharingTest, BroadcastConsumerPinningTheRingIsDetached) {
  JobSpec spec = Spec();  // 4 slots, max_lag 3 by default
  spec.sharing.mode = ConsumerMode::kBroadcast;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  // The hoarder takes the four batches the ring holds and keeps them.
  auto hoarder = client_->Attach(job->id, {.prefetch = 4, .name = "hoarder"});
  ASSERT_TRUE(hoarder.ok());
  std::vector<Batch> kept;
  for (int i = 0; i < 4; ++i) {
    auto batch = (*hoarder)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    kept.push_back(*std::move(batch));
  }
  // A reader joins where the hoarder stands (batch 4). It never falls
  // behind the hoarder, but it would wait forever for a free slot: after
  // the grace period the hoarder is detached.
  auto reader = client_->Attach(job->id, {.name = "reader"});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->position(), (Position{0, 4}));
  std::vector<Got> got;
  EXPECT_EQ(Drain(**reader, job->batches_per_epoch, &got).code(),
            absl::StatusCode::kOutOfRange);
  ASSERT_EQ(got.size(), 8u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].seq, i + 4);
  absl::Status hoarder_status;
  for (int i = 0;
       i < 6 && hoarder_status.code() != absl::StatusCode::kResourceExhausted;
       ++i) {
    hoarder_status = (*hoarder)->Next().status();
  }
  EXPECT_EQ(hoarder_status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(hoarder_status.message().find("has not released"),
            std::string::npos)
      << hoarder_status;
}

TEST_F(SharingTest, BroadcastConsumerJoiningLateStartsWhereTheLeaderStands) {
  JobSpec spec = Spec();
  spec.slots = 8;
  spec.sharing.mode = ConsumerMode::kBroadcast;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto first = client_->Attach(job->id);
  ASSERT_TRUE(first.ok());
  std::vector<Got> first_got;
  ASSERT_TRUE(Drain(**first, 6, &first_got, 3).ok());
  ASSERT_TRUE(Eventually([&] {
    auto s = JobStatsOf(*client_, job->id);
    return s && s->batches_released == 3;
  }));
  // Batches 0-2 were released by the only consumer and are gone; 3 and 4
  // are leased to it (prefetch), the rest decoded ahead. A joiner starts
  // where the first stands, at 5: behind nobody.
  auto late = client_->Attach(job->id);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ((*late)->position(), (Position{0, 5}));
  std::vector<Got> late_got;
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(Drain(**first, 6, &first_got, first_got.size() + 1).ok());
    ASSERT_TRUE(Drain(**late, 6, &late_got, late_got.size() + 1).ok());
  }
  ASSERT_TRUE(Drain(**first, 6, &first_got, first_got.size() + 2).ok());
  EXPECT_EQ((*first)->Next().status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*late)->Next().status().code(), absl::StatusCode::kOutOfRange);
  ASSERT_EQ(late_got.size(), 7u);
  ASSERT_EQ(first_got.size(), 12u);
  for (size_t i = 0; i < late_got.size(); ++i) {
    EXPECT_EQ(late_got[i].seq, 5 + i);
    EXPECT_EQ(late_got[i].checksum, first_got[late_got[i].seq].checksum);
  }
}

TEST_F(SharingTest, BroadcastRefusesTooFewSlotsAndOutOfRangeLag) {
  JobSpec spec = Spec();
  spec.slots = 1;
  spec.sharing.mode = ConsumerMode::kBroadcast;
  auto job = client_->CreateJob(spec);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("slots >= 2"), std::string::npos);
  spec.slots = 4;
  spec.sharing.max_lag = 4;
  job = client_->CreateJob(spec);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("sharing.max_lag"), std::string::npos);
}

TEST_F(SharingTest, PartitionGivesEachBatchToExactlyOneConsumer) {
  JobSpec spec = Spec();
  spec.sharing.mode = ConsumerMode::kPartition;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  std::vector<std::vector<Got>> got(2);
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int i = 0; i < 2; ++i) {
    auto c = client_->Attach(job->id);
    ASSERT_TRUE(c.ok()) << c.status();
    consumers.push_back(*std::move(c));
  }
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      EXPECT_EQ(Drain(*consumers[i], job->batches_per_epoch, &got[i]).code(),
                absl::StatusCode::kOutOfRange);
    });
  }
  for (auto& t : threads) t.join();
  std::multiset<uint64_t> seqs;
  for (const auto& g : got) {
    for (const Got& b : g) seqs.insert(b.seq);
  }
  EXPECT_EQ(seqs.size(), 12u);
  for (uint64_t s = 0; s < 12; ++s) EXPECT_EQ(seqs.count(s), 1u) << s;
}

TEST_F(SharingTest, PartitionRedeliversWhatADetachedConsumerHeld) {
  JobSpec spec = Spec();
  spec.sharing.mode = ConsumerMode::kPartition;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto first = client_->Attach(job->id, {.prefetch = 1});
  ASSERT_TRUE(first.ok());
  auto held = (*first)->Next();
  ASSERT_TRUE(held.ok()) << held.status();
  const uint64_t held_seq = held->epoch() * 6 + held->index();
  // A second consumer joins mid-epoch and takes everything else; the job
  // cannot finish while the first holds its batch.
  auto second = client_->Attach(job->id);
  ASSERT_TRUE(second.ok());
  std::vector<Got> got;
  ASSERT_TRUE(Drain(**second, job->batches_per_epoch, &got, 10).ok());
  // The first consumer goes away without releasing: its batch (and the one
  // prefetched for it, if any) goes to the second.
  first->reset();
  EXPECT_EQ(Drain(**second, job->batches_per_epoch, &got).code(),
            absl::StatusCode::kOutOfRange);
  std::set<uint64_t> seqs;
  for (const Got& b : got) EXPECT_TRUE(seqs.insert(b.seq).second) << b.seq;
  EXPECT_EQ(seqs.size(), 12u);
  EXPECT_EQ(seqs.count(held_seq), 1u);
}

TEST_F(SharingTest, ExclusiveJobRefusesASecondConsumerWithTheReason) {
  auto job = client_->CreateJob(Spec());
  ASSERT_TRUE(job.ok());
  auto first = client_->Attach(job->id);
  ASSERT_TRUE(first.ok());
  auto second = client_->Attach(job->id);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("broadcast or partition"),
            std::string::npos);
}

TEST_F(SharingTest, RingPrefetchesAcrossTheEpochBoundary) {
  JobSpec spec = Spec();
  spec.slots = 8;  // more than an epoch (6 batches)
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok());
  // Before anyone consumes, the ring fills with all of epoch 0 and the
  // start of epoch 1.
  ASSERT_TRUE(Eventually([&] {
    auto s = JobStatsOf(*client_, job->id);
    return s && s->ready_slots == 8;
  }));
  auto stats = JobStatsOf(*client_, job->id);
  EXPECT_EQ(stats->samples_decoded, 8u * 5);
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  std::vector<Got> got;
  ASSERT_TRUE(Drain(**consumer, 6, &got, 8).ok());
  EXPECT_EQ(got[6].seq, 6u);  // epoch 1, batch 0: already decoded
}

class LimitsTest : public ::testing::Test {
 protected:
  LimitsTest()
      : daemon_(DaemonOptions{.workers = 1,
                              .max_jobs_per_user = 2,
                              .max_leases_per_user = 4,
                              .shm_budget_bytes = 8 << 20,
                              .shm_budget_per_user_bytes = 6 << 20}) {
    MakeDataset(daemon_.dir() + "/data", 2, 4);
  }
  JobSpec Spec(uint32_t slots = 2) {
    return {.dataset_path = daemon_.dir() + "/data",
            .batch_size = 4,
            .slots = slots,
            .height = 64,
            .width = 64,
            .epochs = 0};
  }
  TestDaemon daemon_;
};

TEST_F(LimitsTest, JobsAreLimitedPerUserNotPerClientName) {
  auto a = daemon_.Connect();
  auto b = daemon_.Connect();
  ASSERT_TRUE(a->CreateJob(Spec()).ok());
  auto second = a->CreateJob(Spec());
  ASSERT_TRUE(second.ok());
  auto third = a->CreateJob(Spec());
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("--max_jobs_per_user=2"),
            std::string::npos)
      << third.status();
  // Another client of the same user (another name) is the same user.
  EXPECT_EQ(b->CreateJob(Spec()).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Deleting makes room again.
  ASSERT_TRUE(a->DeleteJob(second->id).ok());
  EXPECT_TRUE(b->CreateJob(Spec()).ok());
}

TEST_F(LimitsTest, OutstandingBatchesArePerUser) {
  auto a = daemon_.Connect();
  auto b = daemon_.Connect();
  auto job1 = a->CreateJob(Spec());
  auto job2 = a->CreateJob(Spec(8));
  ASSERT_TRUE(job1.ok() && job2.ok());
  auto c1 = a->Attach(job1->id, {.prefetch = 3});
  ASSERT_TRUE(c1.ok()) << c1.status();
  auto c2 = a->Attach(job2->id, {.prefetch = 2});
  EXPECT_EQ(c2.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c2.status().message().find("--max_leases_per_user"),
            std::string::npos)
      << c2.status();
  // A client calling itself something else is still the same user.
  auto c3 = b->Attach(job2->id, {.prefetch = 2});
  EXPECT_EQ(c3.status().code(), absl::StatusCode::kResourceExhausted);
  // Closing a consumer gives its share back.
  c1->reset();
  absl::StatusOr<std::unique_ptr<Consumer>> c4;
  EXPECT_TRUE(Eventually([&] {
    c4 = b->Attach(job2->id, {.prefetch = 4});
    return c4.ok();
  })) << c4.status();
  // At its limit the client is held back, not cut off: holding 4 batches
  // it gets no fifth until it releases one.
  std::vector<Batch> held;
  for (int i = 0; i < 4; ++i) {
    auto batch = (*c4)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    held.push_back(*std::move(batch));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto stats = JobStatsOf(*a, job2->id);
  ASSERT_TRUE(stats.has_value());
  ASSERT_EQ(stats->consumer.size(), 1u);
  EXPECT_EQ(stats->consumer[0].batches_delivered, 4u);
  held.clear();
  for (int i = 0; i < 6; ++i) {
    auto batch = (*c4)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
  }
}

TEST_F(LimitsTest, SharedMemoryBudgetAndDevShmAreCheckedAtCreateJob) {
  auto client = daemon_.Connect();
  // 64x64x3 x 4 images = 48 KiB per slot (+ headers): 64 slots ~ 3.3 MiB.
  // One user may hold 6 MiB of the 8: 130 slots (~6.8 MiB) are too many.
  auto too_big = client->CreateJob(Spec(130));
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.status().message().find("of the 6M one user may hold"),
            std::string::npos)
      << too_big.status();
  auto big = client->CreateJob(Spec(64));
  ASSERT_TRUE(big.ok()) << big.status();
  auto second = client->CreateJob(Spec(100));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("budget of 8M (--shm_budget)"),
            std::string::npos)
      << second.status();
  ASSERT_TRUE(client->DeleteJob(big->id).ok());
  EXPECT_TRUE(client->CreateJob(Spec(100)).ok());
  auto stats = client->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->shm_budget_bytes, 8u << 20);
  EXPECT_GT(stats->shm_free_bytes, 0u);
}

TEST(DevShmTest, ARingLargerThanDevShmIsRefusedWithTheNumbers) {
  TestDaemon daemon;
  MakeDataset(daemon.dir() + "/data", 1, 2);
  auto client = daemon.Connect();
  // 3000 float32 images of 224x224 per slot (1.8 GB) x 256 slots.
  JobSpec spec{.dataset_path = daemon.dir() + "/data",
               .batch_size = 3000,
               .slots = 256,
               .dtype = DType::kFloat32};
  auto job = client->CreateJob(spec);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(job.status().message().find("/dev/shm has only"), std::string::npos)
      << job.status();
  EXPECT_TRUE(daemon.Segments().empty());
}

TEST_F(SharingTest, AJobTakesAtMost64Consumers) {
  JobSpec spec = Spec();
  spec.sharing.mode = ConsumerMode::kPartition;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok());
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int i = 0; i < 64; ++i) {
    auto consumer = client_->Attach(job->id, {.prefetch = 1});
    ASSERT_TRUE(consumer.ok()) << i << ": " << consumer.status();
    consumers.push_back(*std::move(consumer));
  }
  auto one_more = client_->Attach(job->id, {.prefetch = 1});
  EXPECT_EQ(one_more.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(one_more.status().message().find("64 consumers"), std::string::npos)
      << one_more.status();
  consumers.pop_back();
  EXPECT_TRUE(Eventually([&] {
    return client_->Attach(job->id, {.prefetch = 1}).ok();
  })) << "a consumer that left makes room";
}

}  // namespace
}  // namespace stoker::testing
