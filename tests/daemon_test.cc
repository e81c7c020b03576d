// Integration tests: a real stokerd (in this process) on a private Unix
// socket, real shared memory, and the client SDK.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

// The test utilities (tests/test_util.h) are in this namespace.
namespace stoker::testing {
namespace {

struct Seen {
  uint64_t epoch;
  uint64_t batch;
  std::vector<int64_t> indices;
  std::vector<int64_t> labels;
};

// Consumes until the stream ends; returns what it saw and the final status.
absl::Status ConsumeAll(Consumer& consumer, std::vector<Seen>* seen,
                        const std::function<void(const Batch&)>& check = {}) {
  for (;;) {
    absl::StatusOr<Batch> batch = consumer.Next();
    if (!batch.ok()) return batch.status();
    seen->push_back({batch->epoch(),
                     batch->index(),
                     {batch->indices().begin(), batch->indices().end()},
                     {batch->labels().begin(), batch->labels().end()}});
    if (check) check(*batch);
    if (absl::Status intact = batch->CheckIntact(); !intact.ok()) return intact;
  }
}

class DaemonTest : public ::testing::Test {
 protected:
  JobSpec Spec(const std::string& root) {
    return {.dataset_path = root,
            .batch_size = 7,
            .slots = 3,
            .height = 32,
            .width = 40,
            .seed = 11,
            .epochs = 2};
  }
  std::string DataDir(const std::string& name = "data") {
    return daemon_.dir() + "/" + name;
  }

  TestDaemon daemon_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
};

TEST_F(DaemonTest, TwoEpochsDeliverEverySampleOnceWithItsLabel) {
  const auto data = MakeDataset(DataDir(), 3, 10);
  auto job = client_->CreateJob(Spec(DataDir()));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->num_samples, 30u);
  EXPECT_EQ(job->batches_per_epoch, 5u);
  EXPECT_EQ(job->class_names, data.class_names);
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  std::vector<Seen> seen;
  const absl::Status end = ConsumeAll(**consumer, &seen);
  EXPECT_EQ(end.code(), absl::StatusCode::kOutOfRange) << end;
  ASSERT_EQ(seen.size(), 10u);
  std::map<uint64_t, std::multiset<int64_t>> per_epoch;
  std::map<uint64_t, std::vector<int64_t>> order;
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].epoch, i / 5);
    EXPECT_EQ(seen[i].batch, i % 5);
    EXPECT_EQ(seen[i].indices.size(), seen[i].batch == 4 ? 2u : 7u);
    for (size_t r = 0; r < seen[i].indices.size(); ++r) {
      const int64_t index = seen[i].indices[r];
      ASSERT_GE(index, 0);
      ASSERT_LT(index, 30);
      EXPECT_EQ(seen[i].labels[r], data.labels[index]) << "sample " << index;
      per_epoch[seen[i].epoch].insert(index);
      order[seen[i].epoch].push_back(index);
    }
  }
  for (uint64_t epoch : {0, 1}) {
    ASSERT_EQ(per_epoch[epoch].size(), 30u);
    for (int64_t i = 0; i < 30; ++i) {
      EXPECT_EQ(per_epoch[epoch].count(i), 1u) << "epoch " << epoch;
    }
  }
  EXPECT_NE(order[0], order[1]) << "epochs are not reshuffled";
  consumer->reset();
  EXPECT_TRUE(Eventually([&] {
    auto info = client_->GetJob(job->id);
    return info.ok() && info->state == JobState::kFinished;
  }));
  EXPECT_TRUE(daemon_.Segments().empty()) << "a finished job keeps its ring";
}

TEST_F(DaemonTest, PixelsEqualAnIndependentReferenceDecode) {
  const auto data = MakeDataset(DataDir(), 2, 6, 40, 32, /*vary_size=*/false);
  auto job = client_->CreateJob(Spec(DataDir()));
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  std::vector<Seen> seen;
  int compared = 0;
  ConsumeAll(**consumer, &seen, [&](const Batch& batch) {
    const TensorView<uint8_t> images = batch.images();
    ASSERT_EQ(images.dim(1), 32);
    ASSERT_EQ(images.dim(2), 40);
    ASSERT_EQ(images.dim(3), 3);
    for (uint32_t row = 0; row < batch.size(); ++row) {
      const auto reference =
          testing::ReferenceDecode(data.paths[batch.indices()[row]]);
      ASSERT_EQ(std::vector<uint8_t>(images.data() + row * 32 * 40 * 3,
                                     images.data() + (row + 1) * 32 * 40 * 3),
                reference.pixels)
          << "row " << row << " of batch " << batch.index();
      ++compared;
    }
  }).IgnoreError();
  EXPECT_EQ(compared, 24);
}

TEST_F(DaemonTest, ResizedPixelsAreCloseToAReferenceResize) {
  const auto data = MakeDataset(DataDir(), 2, 4, 96, 72, /*vary_size=*/true,
                                /*smooth=*/true);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 1;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok());
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  std::vector<Seen> seen;
  ConsumeAll(**consumer, &seen, [&](const Batch& batch) {
    for (uint32_t row = 0; row < batch.size(); ++row) {
      auto reference = [&](int64_t index) {
        return testing::ReferenceResize(
            testing::ReferenceDecode(data.paths[index]), 40, 32);
      };
      const int64_t index = batch.indices()[row];
      const uint8_t* got = batch.images().data() + row * 32 * 40 * 3;
      // Within a few levels of an exact area average (libyuv's box filter
      // weighs whole source pixels) ...
      EXPECT_LT(testing::MeanAbsDiff(got, reference(index).pixels.data(),
                                     32 * 40 * 3),
                4.0);
      // ... and far from any other sample.
      EXPECT_GT(testing::MeanAbsDiff(
                    got, reference((index + 1) % 8).pixels.data(), 32 * 40 * 3),
                12.0);
    }
  }).IgnoreError();
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(DaemonTest, SameSeedSameOrderOtherSeedOtherOrder) {
  MakeDataset(DataDir(), 2, 10);
  auto order_of = [&](uint64_t seed) {
    JobSpec spec = Spec(DataDir());
    spec.seed = seed;
    spec.epochs = 1;
    auto job = client_->CreateJob(spec);
    EXPECT_TRUE(job.ok());
    auto consumer = client_->Attach(job->id);
    std::vector<Seen> seen;
    ConsumeAll(**consumer, &seen).IgnoreError();
    std::vector<int64_t> order;
    for (const Seen& s : seen) {
      order.insert(order.end(), s.indices.begin(), s.indices.end());
    }
    return order;
  };
  const auto first = order_of(5);
  EXPECT_EQ(first.size(), 20u);
  EXPECT_EQ(first, order_of(5));
  EXPECT_NE(first, order_of(6));
}

TEST_F(DaemonTest, DropLastDropsTheShortBatch) {
  MakeDataset(DataDir(), 2, 10);
  JobSpec spec = Spec(DataDir());
  spec.drop_last = true;
  spec.epochs = 1;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->batches_per_epoch, 2u);
  auto consumer = client_->Attach(job->id);
  std::vector<Seen> seen;
  ConsumeAll(**consumer, &seen).IgnoreError();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].indices.size(), 7u);
}

TEST_F(DaemonTest, RanksShardEachEpochLikeDistributedSampler) {
  MakeDataset(DataDir(), 2, 5);  // 10 samples
  for (bool cut : {false, true}) {
    std::map<uint64_t, std::multiset<int64_t>> per_epoch;
    for (uint32_t rank = 0; rank < 3; ++rank) {
      JobSpec spec = Spec(DataDir());
      spec.batch_size = 2;
      spec.rank = rank;
      spec.world_size = 3;
      spec.shard_drop_last = cut;
      auto job = client_->CreateJob(spec);
      ASSERT_TRUE(job.ok()) << job.status();
      EXPECT_EQ(job->batches_per_epoch, 2u);  // 4 (padded) or 3 (cut) each
      EXPECT_EQ(job->spec.rank, rank);
      auto consumer = client_->Attach(job->id);
      std::vector<Seen> seen;
      EXPECT_EQ(ConsumeAll(**consumer, &seen).code(),
                absl::StatusCode::kOutOfRange);
      for (const Seen& s : seen) {
        per_epoch[s.epoch].insert(s.indices.begin(), s.indices.end());
      }
    }
    for (uint64_t epoch : {0, 1}) {
      const auto& all = per_epoch[epoch];
      std::set<int64_t> distinct(all.begin(), all.end());
      if (cut) {
        EXPECT_EQ(all.size(), 9u);  // the order cut to 3 x 3
        EXPECT_EQ(distinct.size(), 9u) << "ranks overlap";
      } else {
        EXPECT_EQ(all.size(), 12u);  // padded to 3 x 4 with its head
        EXPECT_EQ(distinct.size(), 10u) << "the epoch is not covered";
      }
    }
  }
}

TEST_F(DaemonTest, AnEpochWithoutABatchIsRefused) {
  MakeDataset(DataDir(), 1, 3);
  JobSpec spec = Spec(DataDir());  // batch_size 7
  spec.drop_last = true;
  spec.epochs = 0;
  auto job = client_->CreateJob(spec);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("no batch"), absl::string_view::npos)
      << job.status();
  spec.drop_last = false;
  spec.rank = 3;
  spec.world_size = 3;
  job = client_->CreateJob(spec);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("rank"), absl::string_view::npos);
  EXPECT_TRUE(daemon_.Segments().empty());
}

TEST_F(DaemonTest, TwoJobsConsumedAtOnceByTwoClients) {
  MakeDataset(DataDir("a"), 2, 12);
  MakeDataset(DataDir("b"), 3, 9);
  auto run = [&](const std::string& root, size_t* samples) {
    auto client = daemon_.Connect();
    JobSpec spec = Spec(root);
    spec.slots = 2;
    auto job = client->CreateJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    auto consumer = client->Attach(job->id);
    ASSERT_TRUE(consumer.ok()) << consumer.status();
    std::vector<Seen> seen;
    EXPECT_EQ(ConsumeAll(**consumer, &seen).code(),
              absl::StatusCode::kOutOfRange);
    for (const Seen& s : seen) *samples += s.indices.size();
  };
  size_t a = 0, b = 0;
  std::thread ta(run, DataDir("a"), &a);
  std::thread tb(run, DataDir("b"), &b);
  ta.join();
  tb.join();
  EXPECT_EQ(a, 48u);
  EXPECT_EQ(b, 54u);
  auto jobs = client_->ListJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 2u);
}

TEST_F(DaemonTest, CpuPathExposesTypedTensorsOfTheRightShape) {
  MakeDataset(DataDir(), 2, 5);
  auto job = client_->CreateJob(Spec(DataDir()));
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  absl::StatusOr<Batch> batch = (*consumer)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->valid());
  EXPECT_EQ(batch->size(), 7u);
  EXPECT_EQ(batch->images().rank(), 4);
  EXPECT_EQ(batch->images().size(), 7u * 32 * 40 * 3);
  EXPECT_EQ(batch->images().bytes(), batch->images().span().size_bytes());
  EXPECT_EQ(batch->labels().size(), 7u);
  EXPECT_EQ(batch->indices().size(), 7u);
  EXPECT_EQ(batch->generation() % 2, 0u);
  EXPECT_TRUE(batch->CheckIntact().ok());
  Batch moved = *std::move(batch);
  EXPECT_FALSE(batch->valid());
  moved.Release();
  EXPECT_FALSE(moved.valid());
  EXPECT_EQ(moved.CheckIntact().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(DaemonTest, ZeroPrefetchStillDelivers) {
  MakeDataset(DataDir(), 1, 7);
  auto job = client_->CreateJob(Spec(DataDir()));
  auto consumer = client_->Attach(job->id, {.prefetch = 0});
  ASSERT_TRUE(consumer.ok());
  std::vector<Seen> seen;
  EXPECT_EQ(ConsumeAll(**consumer, &seen).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(DaemonTest, AConsumerThatLeavesMidEpochLosesNothing) {
  MakeDataset(DataDir(), 2, 14);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 1;
  auto job = client_->CreateJob(spec);
  std::multiset<int64_t> delivered;
  Batch held;
  {
    auto first = client_->Attach(job->id);
    ASSERT_TRUE(first.ok());
    for (int i = 0; i < 2; ++i) {
      auto batch = (*first)->Next();
      ASSERT_TRUE(batch.ok());
      delivered.insert(batch->indices().begin(), batch->indices().end());
    }
    auto kept = (*first)->Next();  // held, never released
    ASSERT_TRUE(kept.ok());
    held = *std::move(kept);
  }  // the first consumer goes away holding a lease
  auto second = client_->Attach(job->id);
  ASSERT_TRUE(second.ok()) << second.status();
  // Its resume position starts at the job's first unreleased batch.
  EXPECT_EQ((*second)->position(), (Position{0, held.index()}));
  std::vector<Seen> seen;
  EXPECT_EQ(ConsumeAll(**second, &seen).code(), absl::StatusCode::kOutOfRange);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].batch, held.index()) << "the held batch comes first";
  for (const Seen& s : seen)
    delivered.insert(s.indices.begin(), s.indices.end());
  EXPECT_EQ(delivered.size(), 28u);
  for (int64_t i = 0; i < 28; ++i) EXPECT_EQ(delivered.count(i), 1u) << i;
}

TEST_F(DaemonTest, ABatchTakenBackIsVoidInTheConsumerThatHeldIt) {
  MakeDataset(DataDir(), 2, 8);
  JobSpec spec = Spec(DataDir());
  spec.slots = 1;
  spec.epochs = 0;  // keeps refilling the one slot
  auto job = client_->CreateJob(spec);
  Batch stale;
  {
    auto first = client_->Attach(job->id, {.prefetch = 1});
    ASSERT_TRUE(first.ok());
    auto batch = (*first)->Next();
    ASSERT_TRUE(batch.ok());
    stale = *std::move(batch);
  }
  // The stream ended with the batch unconfirmed: the daemon took it back
  // before anyone else could receive it, and the batch is void at once,
  // though its slot still holds it.
  const absl::Status taken = stale.CheckIntact();
  EXPECT_EQ(taken.code(), absl::StatusCode::kCancelled) << taken;
  EXPECT_NE(taken.message().find("may not be used, its lease was taken back: "
                                 "consumer '' of client "),
            std::string::npos)
      << taken;
  EXPECT_NE(taken.message().find("closed its stream"), std::string::npos)
      << taken;
  auto second = client_->Attach(job->id, {.prefetch = 1});
  ASSERT_TRUE(second.ok());
  auto again = (*second)->Next();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->index(), stale.index());
  EXPECT_EQ(again->generation(), stale.generation());
  EXPECT_TRUE(again->CheckIntact().ok());
  EXPECT_FALSE(stale.CheckIntact().ok());
}

TEST_F(DaemonTest, AConfirmedBatchIsNeverDeliveredAgain) {
  MakeDataset(DataDir(), 2, 8);
  JobSpec spec = Spec(DataDir());
  spec.slots = 1;
  spec.epochs = 0;
  auto job = client_->CreateJob(spec);
  Batch kept;
  {
    auto first = client_->Attach(job->id, {.prefetch = 1});
    ASSERT_TRUE(first.ok());
    auto batch = (*first)->Next();
    ASSERT_TRUE(batch.ok());
    kept = *std::move(batch);
    EXPECT_TRUE(kept.CheckIntact().ok());  // confirmed: it is this one's
  }
  // The stream ended before the release: the confirmed batch counts as
  // consumed (released, in the stats), and the next consumer receives the
  // batch after it.
  EXPECT_TRUE(Eventually([&] {
    auto stats = JobStatsOf(*client_, job->id);
    return stats && stats->batches_released == 1;
  }));
  auto second = client_->Attach(job->id, {.prefetch = 1});
  ASSERT_TRUE(second.ok());
  {
    auto next = (*second)->Next();
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next->index(), kept.index() + 1);
  }
  // Its slot was refilled since: reading it now is reading another batch.
  EXPECT_TRUE(Eventually([&] { return !kept.CheckIntact().ok(); }));
  EXPECT_EQ(kept.CheckIntact().code(), absl::StatusCode::kDataLoss);
}

TEST_F(DaemonTest, RejectsBadJobSpecsNamingTheField) {
  auto expect = [&](JobSpec spec, absl::StatusCode code,
                    const std::string& field) {
    auto job = client_->CreateJob(spec);
    EXPECT_EQ(job.status().code(), code) << job.status();
    EXPECT_NE(job.status().message().find(field), absl::string_view::npos)
        << job.status();
  };
  expect(Spec(DataDir("absent")), absl::StatusCode::kNotFound, "dataset.path");
  std::filesystem::create_directories(DataDir("empty") + "/class_a");
  expect(Spec(DataDir("empty")), absl::StatusCode::kInvalidArgument,
         "found no valid file for the classes class_a");
  MakeDataset(DataDir(), 1, 2);
  JobSpec spec = Spec(DataDir());
  spec.batch_size = 0;
  expect(spec, absl::StatusCode::kInvalidArgument, "batch_size");
  spec.batch_size = 100000;
  expect(spec, absl::StatusCode::kInvalidArgument, "batch_size");
  spec = Spec(DataDir());
  spec.slots = 0;
  expect(spec, absl::StatusCode::kInvalidArgument, "slots");
  EXPECT_EQ(client_->GetJob("j-none").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->DeleteJob("j-none").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->Attach("j-none").status().code(),
            absl::StatusCode::kNotFound);
  // Nothing was reserved for the refused jobs, and the daemon still serves.
  EXPECT_TRUE(daemon_.Segments().empty());
  spec = Spec(DataDir());
  spec.epochs = 1;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = client_->Attach(job->id);
  std::vector<Seen> seen;
  EXPECT_EQ(ConsumeAll(**consumer, &seen).code(),
            absl::StatusCode::kOutOfRange);
}

TEST_F(DaemonTest, ASecondConsumerOfTheSameJobIsRefused) {
  MakeDataset(DataDir(), 1, 4);
  auto job = client_->CreateJob(Spec(DataDir()));
  auto first = client_->Attach(job->id);
  ASSERT_TRUE(first.ok());
  auto second = client_->Attach(job->id);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*first)->Next().ok()) << "the first consumer was disturbed";
}

TEST_F(DaemonTest, DeleteJobEndsItsStreamAndUnlinksItsRing) {
  MakeDataset(DataDir(), 1, 6);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 0;
  auto job = client_->CreateJob(spec);
  ASSERT_EQ(daemon_.Segments().size(), 1u);
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE((*consumer)->Next().ok());
  ASSERT_TRUE(client_->DeleteJob(job->id).ok());
  EXPECT_TRUE(daemon_.Segments().empty());
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) {
    status = (*consumer)->Next().status();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_EQ(client_->GetJob(job->id).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(DaemonTest, ARingDeletedBehindTheDaemonsBackFailsTheJobSayingSo) {
  MakeDataset(DataDir(), 1, 6);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 0;
  spec.sharing.mode = ConsumerMode::kPartition;  // a second may attach
  auto job = client_->CreateJob(spec);
  ASSERT_EQ(daemon_.Segments().size(), 1u);
  auto consumer = client_->Attach(job->id);
  auto held = (*consumer)->Next();
  ASSERT_TRUE(held.ok());
  // What a cleanup of /dev/shm, or systemd's RemoveIPC=, does.
  ASSERT_EQ(::unlink(("/dev/shm/" + daemon_.Segments()[0]).c_str()), 0);
  auto said_so = [&](const absl::Status& status) {
    return status.code() == absl::StatusCode::kAborted &&
           absl::StrContains(status.message(),
                             "was deleted by another "
                             "process") &&
           absl::StrContains(status.message(), "RemoveIPC=");
  };
  // The next attach (its ring request) finds out at once; the daemon's
  // periodic check would within half a second.
  const absl::Status attach = client_->Attach(job->id).status();
  EXPECT_TRUE(said_so(attach)) << attach;
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) {
    status = (*consumer)->Next().status();
  }
  EXPECT_TRUE(said_so(status)) << status;
  EXPECT_TRUE(said_so(held->CheckIntact())) << held->CheckIntact();
  auto info = client_->GetJob(job->id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, JobState::kFailed);
}

TEST_F(DaemonTest, ARingDeletedWithNobodyAttachedIsFoundByTheDaemon) {
  MakeDataset(DataDir(), 1, 6);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 0;
  auto job = client_->CreateJob(spec);
  ASSERT_EQ(daemon_.Segments().size(), 1u);
  ASSERT_EQ(::unlink(("/dev/shm/" + daemon_.Segments()[0]).c_str()), 0);
  EXPECT_TRUE(Eventually([&] {
    auto info = client_->GetJob(job->id);
    return info.ok() && info->state == JobState::kFailed;
  }));
}

TEST_F(DaemonTest, StatsCountDeliveredBatchesPerJob) {
  MakeDataset(DataDir(), 2, 7);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 1;
  auto job = client_->CreateJob(spec);
  auto consumer = client_->Attach(job->id);
  std::vector<Seen> seen;
  ConsumeAll(**consumer, &seen).IgnoreError();
  consumer->reset();
  absl::StatusOr<DaemonStats> stats;
  EXPECT_TRUE(Eventually([&] {
    stats = client_->GetStats();
    return stats.ok() && stats->jobs.size() == 1 &&
           stats->jobs[0].batches_released == 2;
  }));
  EXPECT_EQ(stats->workers, 2u);
  EXPECT_EQ(stats->jobs[0].job_id, job->id);
  EXPECT_EQ(stats->jobs[0].samples_decoded, 14u);
  EXPECT_EQ(stats->jobs[0].batches_delivered, 2u);
  EXPECT_EQ(stats->jobs[0].decode_errors, 0u);
  EXPECT_EQ(stats->jobs[0].state, JobState::kFinished);
}

TEST_F(DaemonTest, ShutdownEndsStreamsWithUnavailableAndLeavesNothing) {
  MakeDataset(DataDir(), 1, 6);
  JobSpec spec = Spec(DataDir());
  spec.epochs = 0;
  auto job = client_->CreateJob(spec);
  // No reconnecting: the consumer is to see the daemon go (else Next()
  // would retry for reconnect_timeout, 60 s, before saying so).
  auto consumer = client_->Attach(job->id, {.reconnect_timeout = {}});
  ASSERT_TRUE((*consumer)->Next().ok());
  daemon_.Shutdown();
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) {
    status = (*consumer)->Next().status();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_TRUE(daemon_.Segments().empty());
  EXPECT_FALSE(std::filesystem::exists(daemon_.daemon().socket_path()));
}

}  // namespace
}  // namespace stoker::testing

namespace stoker::testing {
namespace {

// Two consumers of one broadcast job (delivery starts once both attached).
class ConsumerOptionsTest : public ::testing::Test {
 protected:
  JobInfo CreateBroadcastJob() {
    MakeDataset(daemon_.dir() + "/data", 2, 6);
    JobSpec spec{.dataset_path = daemon_.dir() + "/data",
                 .batch_size = 3,
                 .slots = 4,
                 .height = 32,
                 .width = 40,
                 .seed = 4,
                 .epochs = 2};
    spec.sharing = {.mode = ConsumerMode::kBroadcast, .min_consumers = 2};
    auto job = client_->CreateJob(spec);
    EXPECT_TRUE(job.ok()) << job.status();
    return *job;
  }

  TestDaemon daemon_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
};

TEST_F(ConsumerOptionsTest, NextWithATimeoutLosesNothing) {
  const JobInfo job = CreateBroadcastJob();
  auto first = client_->Attach(job.id);
  ASSERT_TRUE(first.ok());
  // Nothing is delivered before the second consumer attaches.
  auto early = (*first)->Next(std::chrono::milliseconds(50));
  EXPECT_TRUE(absl::IsDeadlineExceeded(early.status())) << early.status();
  auto second = client_->Attach(job.id);
  ASSERT_TRUE(second.ok());
  auto batch = (*first)->Next(std::chrono::seconds(20));
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->epoch(), 0u);
  EXPECT_EQ(batch->index(), 0u);  // the wait cut short skipped nothing
}

TEST_F(ConsumerOptionsTest, CopyOnWriteViewsKeepWritesInTheProcess) {
  const JobInfo job = CreateBroadcastJob();
  // One batch ahead each, so neither holds enough of the ring to count as
  // lagging while the other is being read.
  auto plain = client_->Attach(job.id, {.prefetch = 1});
  auto writer = client_->Attach(job.id, {.prefetch = 1, .copy_on_write = true});
  ASSERT_TRUE(plain.ok() && writer.ok());
  const size_t image_bytes = 3 * 32 * 40 * 3;
  // Every batch of 2 epochs (4 per epoch, 4 slots: each slot reused).
  for (int i = 0; i < 8; ++i) {
    auto a = (*plain)->Next();
    auto b = (*writer)->Next();
    ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
    const auto* ring = static_cast<const uint8_t*>(a->image_tensor().data);
    auto* view =
        static_cast<uint8_t*>(const_cast<void*>(b->image_tensor().data));
    ASSERT_EQ(a->image_tensor().bytes, image_bytes);
    // Before writing, the private view shows the slot's current batch,
    // not an earlier batch's writes.
    ASSERT_EQ(std::memcmp(ring, view, image_bytes), 0) << "batch " << i;
    const std::vector<uint8_t> before(ring, ring + image_bytes);
    for (size_t k = 0; k < image_bytes; k += 97) view[k] ^= 0xff;
    EXPECT_NE(std::memcmp(ring, view, image_bytes), 0);
    // The ring (what the other consumer reads) is untouched.
    EXPECT_EQ(std::memcmp(ring, before.data(), image_bytes), 0);
    EXPECT_TRUE(a->CheckIntact().ok() && b->CheckIntact().ok());
  }
}

}  // namespace
}  // namespace stoker::testing
