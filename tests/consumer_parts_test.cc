// The SDK's consumer parts (client/src/) on their own, with exact numbers and
// explicit times; ConsumeStream against a scripted Loader on a socket in a
// temporary directory of its own. Lease tables are memfds, not /dev/shm.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench/support/process.h"
#include "client/src/consume_stream.h"
#include "client/src/input_account.h"
#include "client/src/lease_book.h"
#include "client/src/position_tracker.h"
#include "common/lease_table.h"
#include "gtest/gtest.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker::internal {
namespace {

TEST(PositionTracker, ReleasesOutOfOrderMoveThePositionOnceTheGapFills) {
  PositionTracker tracker(5);
  tracker.Released(7);
  EXPECT_EQ(tracker.first_unreleased(), 5u);
  EXPECT_TRUE(tracker.IsReleased(7));
  EXPECT_FALSE(tracker.IsReleased(6));
  tracker.Released(5);
  EXPECT_EQ(tracker.first_unreleased(), 6u);
  tracker.Released(6);
  EXPECT_EQ(tracker.first_unreleased(), 8u);
  tracker.Released(2);  // behind the position: already counted
  EXPECT_EQ(tracker.first_unreleased(), 8u);
  EXPECT_TRUE(tracker.IsReleased(2));
}

TEST(PositionTracker, SkippedCountsAsReleasedAndNeverMovesBack) {
  PositionTracker ahead(5);
  ahead.Skipped(7, 9);  // past the position: the gap at 5 and 6 stays
  EXPECT_EQ(ahead.first_unreleased(), 5u);
  EXPECT_FALSE(ahead.IsReleased(6));
  EXPECT_TRUE(ahead.IsReleased(7) && ahead.IsReleased(8));
  EXPECT_FALSE(ahead.IsReleased(9));
  ahead.Released(5);
  ahead.Released(6);
  EXPECT_EQ(ahead.first_unreleased(), 9u);
  PositionTracker from(5);
  from.Released(10);
  from.Skipped(3, 10);  // covers the position: jumps, takes in 10
  EXPECT_EQ(from.first_unreleased(), 11u);
  from.Skipped(1, 4);
  EXPECT_EQ(from.first_unreleased(), 11u);
}

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

// kT0 plus `ms` milliseconds (whole, so that microseconds come out exact).
absl::Time At(int64_t ms) { return kT0 + absl::Milliseconds(ms); }

TEST(InputAccount, FirstNextIsAllWaitAndReportedAtOnce) {
  InputAccount account;
  EXPECT_EQ(account.stats().input_bound_percent, 0);  // no 0/0
  EXPECT_EQ(account.BeginWait(kT0), kT0);
  auto request = account.Account(kT0, At(30), true);
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->report().batches(), 1u);
  EXPECT_EQ(request->report().wait_us(), 30'000u);
  EXPECT_EQ(request->report().step_us(), 0u);
  const InputStats stats = account.stats();
  EXPECT_DOUBLE_EQ(stats.wait_seconds, 0.030);
  EXPECT_EQ(stats.step_seconds, 0);
  EXPECT_DOUBLE_EQ(stats.input_bound_percent, 100);
}

TEST(InputAccount, StepIsReturnToNextCallAndReportsComeOnceASecondWhenSent) {
  InputAccount account;
  // The stream takes no request: no report, and the next is not delayed.
  EXPECT_FALSE(account.Account(kT0, At(30), false).has_value());
  auto first = account.Account(At(130), At(150), true);  // 100 ms step
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->report().batches(), 2u);
  EXPECT_EQ(first->report().wait_us(), 50'000u);
  EXPECT_EQ(first->report().step_us(), 100'000u);
  EXPECT_NEAR(account.stats().input_bound_percent, 100.0 * 50 / 150, 1e-9);
  // 950 ms after the last report: none; 1010 ms after it: one.
  EXPECT_FALSE(account.Account(At(1000), At(1100), true).has_value());
  auto second = account.Account(At(1140), At(1160), true);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->report().batches(), 4u);
  EXPECT_EQ(second->report().wait_us(), 170'000u);
  EXPECT_EQ(second->report().step_us(), 990'000u);
}

TEST(InputAccount, AWaitCutShortGoesOnInTheNextCallAsWaiting) {
  InputAccount account;
  const absl::Time first = account.BeginWait(kT0);
  account.WaitCutShort(first);
  const absl::Time resumed = account.BeginWait(At(2000));
  EXPECT_EQ(resumed, kT0);
  account.Account(resumed, At(2500), true);
  EXPECT_DOUBLE_EQ(account.stats().wait_seconds, 2.5);
  EXPECT_EQ(account.stats().step_seconds, 0);
  EXPECT_EQ(account.BeginWait(At(3000)), At(3000));  // continued once only
  account.Account(At(3000), At(3000), true);
  EXPECT_DOUBLE_EQ(account.stats().step_seconds, 0.5);
}

TEST(InputAccount, TheRecentWindowKeepsTheLastTenSeconds) {
  InputAccount account;
  account.Account(kT0, At(4000), true);       // 4 s wait, at 4 s
  account.Account(At(5000), At(5000), true);  // 1 s step, at 5 s
  auto request = account.Account(At(14500), At(14500), true);  // 9.5 s step
  ASSERT_TRUE(request.has_value());
  // The sample at 4 s is 10.5 s old: out; the one at 5 s (9.5 s) stays.
  EXPECT_EQ(request->report().recent_wait_us(), 0u);
  EXPECT_EQ(request->report().recent_step_us(), 10'500'000u);
  EXPECT_EQ(request->report().wait_us(), 4'000'000u);
  EXPECT_EQ(request->report().step_us(), 10'500'000u);
  EXPECT_EQ(account.stats().recent_input_bound_percent, 0);
  EXPECT_NEAR(account.stats().input_bound_percent, 100.0 * 4 / 14.5, 1e-9);
}

// A daemon's Consume, scripted: it records what the consumer sends, answers
// the attach, sends `batches` handles (batch i in slot i), then ends with
// `status` at once, or once the consumer half-closed.
class ScriptedLoader final : public v1::Loader::Service {
 public:
  using Stream =
      grpc::ServerReaderWriter<v1::ConsumeResponse, v1::ConsumeRequest>;
  struct Script {
    int batches = 0;
    bool end_at_once = false;
    grpc::Status status;
  };
  void Set(Script script) {
    absl::MutexLock lock(&mu_);
    script_ = script;
  }
  std::vector<v1::ConsumeRequest> received() {
    absl::MutexLock lock(&mu_);
    return received_;
  }
  grpc::Status Consume(grpc::ServerContext*, Stream* stream) override {
    Script script;
    {
      absl::MutexLock lock(&mu_);
      script = script_;
    }
    v1::ConsumeResponse response;
    response.mutable_attached()->mutable_job()->set_id("job-7");
    if (!Record(stream) || !stream->Write(response)) return script.status;
    for (int i = 0; i < script.batches; ++i) {
      response.mutable_batch()->set_slot(i);
      response.mutable_batch()->set_batch(i);
      stream->Write(response);
    }
    if (!script.end_at_once) {
      while (Record(stream)) {
      }
    }
    return script.status;
  }

 private:
  bool Record(Stream* stream) {
    v1::ConsumeRequest request;
    if (!stream->Read(&request)) return false;
    absl::MutexLock lock(&mu_);
    received_.push_back(std::move(request));
    return true;
  }

  absl::Mutex mu_;
  Script script_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ConsumeRequest> received_ ABSL_GUARDED_BY(mu_);
};

class ScriptedDaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(target_, grpc::InsecureServerCredentials());
    builder.RegisterService(&loader_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Loader::NewStub(
        grpc::CreateChannel(target_, grpc::InsecureChannelCredentials()));
  }
  // Attaches (prefetch 2) to a daemon following `script`, and starts.
  void Attach(ScriptedLoader::Script script) {
    loader_.Set(script);
    v1::Attached attached;
    auto stream =
        ConsumeStream::Attach(stub_.get(), "client-1", "job-7",
                              ConsumerOptions{.prefetch = 2}, &attached);
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
    stream_->Start();
  }

  // Destroyed in reverse: the stream closes while the server still runs.
  testdata::TempDir dir_{"stoker-parts"};
  const std::string target_ = "unix://" + dir_.path() + "/stoker.sock";
  ScriptedLoader loader_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Loader::StubInterface> stub_;
  std::unique_ptr<ConsumeStream> stream_;
};

using ConsumeStreamTest = ScriptedDaemonTest;

TEST_F(ConsumeStreamTest, TakingAHandleQueuesOneCreditAndOnlyThen) {
  Attach({.batches = 2});
  ASSERT_TRUE(stream_->AwaitHandle(absl::Now() + absl::Seconds(30)));
  auto popped = stream_->Pop();
  ASSERT_TRUE(popped.has_value());
  EXPECT_EQ(popped->handle.batch(), 0u);
  EXPECT_TRUE(popped->open);
  stream_->Close();  // flushes the outbox, then half-closes
  EXPECT_TRUE(stream_->final_status().ok()) << stream_->final_status();
  const std::vector<v1::ConsumeRequest> got = loader_.received();
  ASSERT_EQ(got.size(), 2u) << "one credit for the one handle taken";
  EXPECT_EQ(got[0].attach().credits(), 2u);
  ASSERT_TRUE(got[1].has_credit());
  EXPECT_EQ(got[1].credit().credits(), 1u);
}

TEST_F(ConsumeStreamTest, QueuedHandlesAreDroppedWhenTheStreamEndsWithAnError) {
  Attach({.batches = 2,
          .end_at_once = true,
          .status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                 "lease limit")});
  stream_->Close();  // the reader saw both handles, then the error
  const ConsumeStream::End end = stream_->end();
  EXPECT_TRUE(absl::IsResourceExhausted(end.status)) << end.status;
  EXPECT_FALSE(stream_->Pop().has_value())
      << "a handle whose lease went with the stream was handed out";
}

TEST_F(ConsumeStreamTest, QueuedHandlesOutliveAStreamThatEndedWell) {
  Attach({.batches = 2, .end_at_once = true});
  stream_->Close();
  EXPECT_TRUE(stream_->end().status.ok()) << stream_->end().status;
  for (uint64_t batch : {0u, 1u}) {
    auto popped = stream_->Pop();
    ASSERT_TRUE(popped.has_value()) << batch;
    EXPECT_EQ(popped->handle.batch(), batch);
    EXPECT_FALSE(popped->open) << "a credit queued on a closed stream";
  }
  EXPECT_FALSE(stream_->Pop().has_value());
}

// A later Send must not write or block (the outbox itself is not visible).
TEST_F(ConsumeStreamTest, CloseFlushesWhatWasSentAndLaterSendsNeverArrive) {
  Attach({});
  v1::ConsumeRequest report;
  report.mutable_report()->set_batches(1);
  stream_->Send(report);
  stream_->Close();
  report.mutable_report()->set_batches(2);
  stream_->Send(report);  // must neither write nor block
  stream_->Close();       // idempotent
  const std::vector<v1::ConsumeRequest> got = loader_.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].report().batches(), 1u);
  EXPECT_TRUE(stream_->final_status().ok()) << stream_->final_status();
}

// What LeaseBook says of job-7's batch `place` whose lease was taken back.
absl::Status Void(absl::StatusCode code, const std::string& place,
                  const std::string& why) {
  return absl::Status(code, "batch " + place + " of job job-7 may not be " +
                                "used, its lease was taken back: " + why);
}

// A LeaseBook over a real lease table (the daemon's side and the client's
// mapping of it) for job-7 of 10 batches an epoch, position 2:0 (20).
class LeaseBookTest : public ScriptedDaemonTest {
 protected:
  void MakeBook(ScriptedLoader::Script script = {}, bool with_table = true) {
    Attach(script);
    auto daemon = LeaseTable::Create(8, ::getuid());
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    auto client = LeaseTable::Map(daemon_->TakeFd());
    ASSERT_TRUE(client.ok()) << client.status();
    book_ =
        std::make_unique<LeaseBook>(with_table ? *std::move(client) : nullptr,
                                    "job-7", 10, tracker_, stream_.get());
  }

  std::shared_ptr<PositionTracker> tracker_ =
      std::make_shared<PositionTracker>(20);
  std::unique_ptr<LeaseTable> daemon_;
  std::unique_ptr<LeaseBook> book_;  // destroyed before the stream
};

TEST_F(LeaseBookTest, ConfirmClaimsTheLeaseAndMovesThePosition) {
  MakeBook();
  daemon_->Lease(2, 5);
  book_->HandedOut(2, 5, 20);
  EXPECT_TRUE(book_->Confirm(2, 5, 2, 0).ok());
  EXPECT_EQ(tracker_->first_unreleased(), 21u);
  EXPECT_TRUE(book_->Live(2, 5));
  EXPECT_TRUE(daemon_->Revoke(2)) << "the daemon would hand it out again";
  EXPECT_TRUE(book_->Abandon(absl::UnavailableError("restart")).ok())
      << "a confirmed batch still counted as handed out";
}

TEST_F(LeaseBookTest, ConfirmOfARevokedLeaseIsRefusedWithTheReason) {
  MakeBook();
  daemon_->Lease(2, 5);
  book_->HandedOut(2, 5, 20);
  EXPECT_FALSE(book_->Confirm(2, 4, 2, 0).ok()) << "another generation";
  EXPECT_FALSE(daemon_->Revoke(2));
  EXPECT_FALSE(book_->Live(2, 5));
  EXPECT_EQ(book_->Confirm(2, 5, 2, 0), Void(absl::StatusCode::kDataLoss, "2:0",
                                             "the daemon took the lease back"));
  EXPECT_EQ(tracker_->first_unreleased(), 20u);
  daemon_->Finish(absl::ResourceExhaustedError("lease limit of 4"));
  daemon_->Lease(3, 6);
  daemon_->Revoke(3);
  EXPECT_EQ(
      book_->Confirm(3, 6, 2, 1),
      Void(absl::StatusCode::kResourceExhausted, "2:1", "lease limit of 4"));
}

TEST_F(LeaseBookTest, AReleaseClaimsALiveLeaseAndReportsAVoidOneOnce) {
  MakeBook();
  daemon_->Lease(1, 3);
  book_->HandedOut(1, 3, 20);
  EXPECT_TRUE(book_->Return(1, 3, 2, 0));
  EXPECT_TRUE(daemon_->Revoke(1)) << "a release the daemon would not count";
  daemon_->Lease(1, 4);
  book_->HandedOut(1, 4, 21);
  daemon_->Revoke(1);
  EXPECT_FALSE(book_->Return(1, 4, 2, 1));
  EXPECT_EQ(book_->TakeUnreported(), Void(absl::StatusCode::kDataLoss, "2:1",
                                          "the daemon took the lease back"));
  EXPECT_TRUE(book_->TakeUnreported().ok()) << "reported twice";
  // Never handed out (Next() saw it void): nothing to tell the trainer.
  daemon_->Lease(4, 1);
  daemon_->Revoke(4);
  EXPECT_FALSE(book_->Return(4, 1, 2, 2));
  EXPECT_TRUE(book_->TakeUnreported().ok());
}

TEST_F(LeaseBookTest, AbandonNamesTheBatchHandedOutAndRevokesUnclaimed) {
  MakeBook();
  daemon_->Lease(1, 3);
  daemon_->Lease(2, 4);
  daemon_->Lease(5, 9);
  book_->HandedOut(5, 9, 24);
  ASSERT_TRUE(book_->Confirm(5, 9, 2, 4).ok());
  book_->HandedOut(2, 4, 23);
  EXPECT_EQ(
      book_->Abandon(absl::UnavailableError("the daemon restarted")),
      Void(absl::StatusCode::kUnavailable, "2:3", "the daemon restarted"));
  EXPECT_FALSE(book_->Live(1, 3));
  EXPECT_FALSE(book_->Live(2, 4));
  EXPECT_TRUE(book_->Live(5, 9)) << "a confirmed batch was taken back";
}

TEST_F(LeaseBookTest, AbandonKeepsItsFirstReasonForLaterVoidBatches) {
  MakeBook();
  daemon_->Lease(1, 3);
  EXPECT_TRUE(book_->Abandon(absl::UnavailableError("first")).ok());
  EXPECT_TRUE(book_->Abandon(absl::CancelledError("second")).ok());
  EXPECT_EQ(book_->Confirm(1, 3, 2, 0),
            Void(absl::StatusCode::kUnavailable, "2:0", "first"));
}

TEST_F(LeaseBookTest, AVoidBatchTakesTheStreamsStatusUnlessTheDaemonEndedIt) {
  MakeBook({.end_at_once = true,
            .status = grpc::Status(grpc::StatusCode::ABORTED, "behind")});
  stream_->Close();
  EXPECT_EQ(book_->VoidReason(2, 7),
            Void(absl::StatusCode::kAborted, "2:7", "behind"));
  daemon_->Finish(absl::NotFoundError("job deleted"));
  EXPECT_TRUE(absl::IsNotFound(book_->VoidReason(2, 7)));
  EXPECT_TRUE(absl::IsNotFound(book_->Ended()));
}

TEST_F(LeaseBookTest, WithoutALeaseTableEveryLeaseIsLive) {
  MakeBook({}, /*with_table=*/false);
  daemon_->Lease(1, 3);
  daemon_->Revoke(1);  // not seen: the book has no table
  book_->HandedOut(1, 3, 20);
  EXPECT_TRUE(book_->Live(1, 3));
  EXPECT_TRUE(book_->Confirm(1, 3, 2, 0).ok());
  EXPECT_TRUE(book_->Return(1, 3, 2, 0));
  book_->HandedOut(2, 4, 21);
  EXPECT_TRUE(book_->Abandon(absl::UnavailableError("restart")).ok());
  EXPECT_TRUE(book_->Ended().ok());
}

}  // namespace
}  // namespace stoker::internal
