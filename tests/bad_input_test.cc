// Bad input against a real daemon: corrupt files, malformed requests and
// protocol misuse. The daemon must say what was wrong and keep serving.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "client/src/ring_mapping.h"
#include "common/naming.h"
#include "gtest/gtest.h"
#include "stoker/v1/loader.grpc.pb.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testing::MakeDataset;
using testing::TestDaemon;

void Overwrite(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

class BadInputTest : public ::testing::Test {
 protected:
  std::string Root() { return daemon_.dir() + "/data"; }

  // A dataset of 2 x 8 images where three files are damaged.
  std::vector<std::string> MakeDamagedDataset() {
    data_ = MakeDataset(Root(), 2, 8);
    const std::string good = testdata::ReadTextFile(data_.paths[5]);
    Overwrite(data_.paths[1], "definitely not a jpeg");
    Overwrite(data_.paths[5], good.substr(0, good.size() / 3));
    Overwrite(data_.paths[9], "");
    return {data_.paths[1], data_.paths[5], data_.paths[9]};
  }

  JobSpec Spec(OnError on_error, uint32_t epochs = 1) {
    return {.dataset_path = Root(),
            .batch_size = 4,
            .slots = 2,
            .height = 24,
            .width = 24,
            .epochs = epochs,
            .on_error = on_error};
  }

  std::unique_ptr<v1::Loader::Stub> RawStub() {
    return v1::Loader::NewStub(grpc::CreateChannel(
        daemon_.target(), grpc::InsecureChannelCredentials()));
  }

  TestDaemon daemon_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
  testdata::GeneratedDataset data_;
};

TEST_F(BadInputTest, CorruptFilesAreReplacedAndCountedWithTheirPaths) {
  const std::vector<std::string> bad = MakeDamagedDataset();
  auto job = client_->CreateJob(Spec(OnError::kReplace));
  ASSERT_TRUE(job.ok());
  auto consumer = client_->Attach(job->id);
  std::multiset<int64_t> seen;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) {
      EXPECT_EQ(batch.status().code(), absl::StatusCode::kOutOfRange)
          << batch.status();
      break;
    }
    for (size_t r = 0; r < batch->size(); ++r) {
      seen.insert(batch->indices()[r]);
      EXPECT_EQ(batch->labels()[r], data_.labels[batch->indices()[r]]);
    }
  }
  EXPECT_EQ(seen.size(), 16u) << "a bad sample left a hole in a batch";
  for (int64_t bad_index : {1, 5, 9}) EXPECT_EQ(seen.count(bad_index), 0u);
  // Deterministic replacement: the next index stands in for the bad one.
  EXPECT_EQ(seen.count(2), 2u);
  EXPECT_EQ(seen.count(6), 2u);
  EXPECT_EQ(seen.count(10), 2u);
  auto stats = client_->GetStats();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->jobs.size(), 1u);
  EXPECT_EQ(stats->jobs[0].decode_errors, 3u);
  std::set<std::string> reported;
  for (const SampleError& e : stats->jobs[0].errors) {
    reported.insert(e.path);
    EXPECT_FALSE(e.reason.empty());
  }
  EXPECT_EQ(reported, std::set<std::string>(bad.begin(), bad.end()));
}

TEST_F(BadInputTest, OnErrorFailEndsTheJobNamingTheFileWhileOthersFlow) {
  const std::vector<std::string> bad = MakeDamagedDataset();
  MakeDataset(daemon_.dir() + "/healthy", 2, 10);
  auto failing = client_->CreateJob(Spec(OnError::kFail, 0));
  JobSpec healthy_spec = Spec(OnError::kFail, 3);
  healthy_spec.dataset_path = daemon_.dir() + "/healthy";
  auto healthy = client_->CreateJob(healthy_spec);
  ASSERT_TRUE(failing.ok() && healthy.ok());
  size_t healthy_samples = 0;
  std::thread other([&] {
    auto client = daemon_.Connect();
    auto consumer = client->Attach(healthy->id);
    for (;;) {
      auto batch = (*consumer)->Next();
      if (!batch.ok()) {
        EXPECT_EQ(batch.status().code(), absl::StatusCode::kOutOfRange);
        break;
      }
      healthy_samples += batch->size();
    }
  });
  // The job may fail before or after the consumer attaches: either way the
  // trainer learns why.
  auto consumer = client_->Attach(failing->id);
  absl::Status status = consumer.status();
  while (status.ok()) status = (*consumer)->Next().status();
  other.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  int named = 0;
  for (const std::string& path : bad) {
    named += status.message().find(path) != absl::string_view::npos;
  }
  EXPECT_EQ(named, 1) << status;
  auto info = client_->GetJob(failing->id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, JobState::kFailed);
  EXPECT_NE(info->error.find("on_error=FAIL"), std::string::npos)
      << info->error;
  EXPECT_EQ(healthy_samples, 60u);
}

// A trainer attaching just as its job fails fetches the ring after it is
// unlinked: the ring socket then gives the job's own failure, not a bare
// "gone".
TEST_F(BadInputTest, ARingRequestForAFailedJobSaysWhyItFailed) {
  const std::vector<std::string> bad = MakeDamagedDataset();
  auto failing = client_->CreateJob(Spec(OnError::kFail, 0));
  ASSERT_TRUE(failing.ok()) << failing.status();
  ASSERT_TRUE(testing::Eventually([&] {
    auto info = client_->GetJob(failing->id);
    return info.ok() && info->state == JobState::kFailed;
  }));
  auto ring = internal::RingMapping::Open(
      RingSocketPath(SocketPathFromTarget(daemon_.target())), failing->id);
  ASSERT_FALSE(ring.ok());
  EXPECT_EQ(ring.status().code(), absl::StatusCode::kDataLoss) << ring.status();
  EXPECT_NE(ring.status().message().find("on_error=FAIL"), std::string::npos)
      << ring.status();
}

TEST_F(BadInputTest, UnknownEnumValuesAreInvalidArgumentNamingTheField) {
  MakeDataset(Root(), 1, 2);
  auto stub = RawStub();
  auto create = [&](const std::function<void(v1::JobSpec*)>& mutate) {
    v1::CreateJobRequest request;
    v1::JobSpec* spec = request.mutable_spec();
    spec->mutable_dataset()->set_path(Root());
    spec->set_batch_size(2);
    spec->set_slots(2);
    spec->mutable_output()->set_height(8);
    spec->mutable_output()->set_width(8);
    mutate(spec);
    grpc::ClientContext context;
    v1::Job job;
    return stub->CreateJob(&context, request, &job);
  };
  grpc::Status status = create(
      [](v1::JobSpec* s) { s->set_on_error(static_cast<v1::OnError>(99)); });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("on_error"), std::string::npos);
  status = create([](v1::JobSpec* s) {
    s->mutable_output()->set_dtype(static_cast<v1::DType>(77));
  });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("output.dtype"), std::string::npos);
  EXPECT_TRUE(create([](v1::JobSpec*) {}).ok());
}

TEST_F(BadInputTest, ConsumeProtocolMisuseEndsOnlyThatStream) {
  MakeDataset(Root(), 1, 8);
  auto job = client_->CreateJob(Spec(OnError::kReplace, 0));
  ASSERT_TRUE(job.ok());
  auto stub = RawStub();
  auto finish_after = [&](const std::vector<v1::ConsumeRequest>& requests) {
    grpc::ClientContext context;
    auto stream = stub->Consume(&context);
    for (const auto& r : requests) stream->Write(r);
    stream->WritesDone();
    v1::ConsumeResponse response;
    while (stream->Read(&response)) {
    }
    return stream->Finish();
  };
  v1::ConsumeRequest credit;
  credit.mutable_credit()->set_credits(1);
  grpc::Status status = finish_after({credit});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("attach"), std::string::npos);

  v1::ConsumeRequest attach;
  attach.mutable_attach()->set_job_id(job->id);
  v1::ConsumeRequest bad_release;
  bad_release.mutable_release()->set_slot(1000);
  status = finish_after({attach, bad_release});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("release.slot"), std::string::npos);

  v1::ConsumeRequest stale_release;
  stale_release.mutable_release()->set_slot(0);
  stale_release.mutable_release()->set_generation(12345);
  status = finish_after({attach, stale_release});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  status = finish_after({attach, attach});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  status = finish_after({v1::ConsumeRequest()});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // Absurd credit is capped, not overflowed: the stream still works.
  v1::ConsumeRequest huge_credit;
  huge_credit.mutable_credit()->set_credits(0xffffffffu);
  {
    grpc::ClientContext context;
    auto stream = stub->Consume(&context);
    ASSERT_TRUE(stream->Write(attach));
    ASSERT_TRUE(stream->Write(huge_credit));
    ASSERT_TRUE(stream->Write(huge_credit));
    v1::ConsumeResponse response;
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_TRUE(response.has_attached());
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_TRUE(response.has_batch());
    stream->WritesDone();
    while (stream->Read(&response)) {
    }
    EXPECT_TRUE(stream->Finish().ok());
  }

  // After all that the job still serves a well-behaved consumer.
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  for (int i = 0; i < 5; ++i) {
    auto batch = (*consumer)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
  }
}

TEST_F(BadInputTest, DoubleAndForeignReleasesAndDeletedJobsAreRefused) {
  MakeDataset(Root(), 1, 16);
  JobSpec spec = Spec(OnError::kReplace, 0);
  spec.slots = 4;
  spec.sharing.mode = ConsumerMode::kPartition;
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok());
  auto stub = RawStub();
  v1::ConsumeRequest attach;
  attach.mutable_attach()->set_job_id(job->id);
  attach.mutable_attach()->set_credits(1);
  struct Stream {
    grpc::ClientContext context;
    std::unique_ptr<
        grpc::ClientReaderWriter<v1::ConsumeRequest, v1::ConsumeResponse>>
        rw;
  };
  auto open = [&](Stream& s) {
    s.rw = stub->Consume(&s.context);
    ASSERT_TRUE(s.rw->Write(attach));
    v1::ConsumeResponse response;
    ASSERT_TRUE(s.rw->Read(&response));
    ASSERT_TRUE(response.has_attached());
  };
  auto next = [](Stream& s) {
    v1::ConsumeResponse response;
    EXPECT_TRUE(s.rw->Read(&response));
    EXPECT_TRUE(response.has_batch());
    return response.batch();
  };
  auto release_of = [](const v1::BatchHandle& handle) {
    v1::ConsumeRequest release;
    release.mutable_release()->set_slot(handle.slot());
    release.mutable_release()->set_generation(handle.generation());
    return release;
  };
  auto finish = [](Stream& s) {
    s.rw->WritesDone();
    v1::ConsumeResponse response;
    while (s.rw->Read(&response)) {
    }
    return s.rw->Finish();
  };
  // Another consumer's slot, with the right generation: refused.
  Stream a, b;
  open(a);
  open(b);
  const v1::BatchHandle held_by_a = next(a);
  ASSERT_TRUE(b.rw->Write(release_of(held_by_a)));
  grpc::Status status = finish(b);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("does not hold it"), std::string::npos)
      << status.error_message();
  // Its owner releases it once; a second time is refused.
  ASSERT_TRUE(a.rw->Write(release_of(held_by_a)));
  ASSERT_TRUE(a.rw->Write(release_of(held_by_a)));
  status = finish(a);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << status.error_message();
  // A deleted job's handles lead nowhere: its stream ends, its id is gone.
  auto consumer = client_->Attach(job->id, {.reconnect_timeout = {}});
  ASSERT_TRUE(consumer.ok());
  ASSERT_TRUE((*consumer)->Next().ok());
  ASSERT_TRUE(client_->DeleteJob(job->id).ok());
  absl::Status ended;
  while (ended.ok()) ended = (*consumer)->Next().status();
  EXPECT_EQ(ended.code(), absl::StatusCode::kCancelled) << ended;
  Stream late;
  late.rw = stub->Consume(&late.context);
  ASSERT_TRUE(late.rw->Write(attach));
  EXPECT_EQ(finish(late).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace stoker
