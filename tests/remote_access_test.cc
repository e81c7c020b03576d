// A job's remote access (the trainer's credentials for its s3:// and
// http(s):// shards) in its three forms: the SDK's stoker::RemoteAccess
// (client.h), the wire's v1::RemoteAccess (loader.proto) and the daemon's
// FetchAccess (daemon/remote/remote_access.h), with one conversion at each
// boundary: internal::ToProto (client/src/convert.cc) and FetchAccessOf
// (daemon/api/proto_convert.cc). A field added to the proto and dropped by
// either fails here, found by reflection as in spec_agreement_test.cc.
// Then the SDK's reconnecting: a job the daemon lost is created again with
// the credentials it was created with (the daemon keeps none).
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench/support/process.h"
#include "client/src/client_impl.h"
#include "client/src/convert.h"
#include "client/src/job_origin.h"
#include "client/src/reconnector.h"
#include "daemon/api/proto_convert.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "stoker/client.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::util::MessageDifferencer;

// The fields of `access` left at their defaults (proto3: not sent).
std::vector<std::string> Unset(const v1::RemoteAccess& access) {
  std::vector<std::string> unset;
  const auto* descriptor = access.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (!access.GetReflection()->HasField(access, field)) {
      unset.push_back(field->name());
    }
  }
  return unset;
}

// Every field unlike its default.
RemoteAccess EveryField() {
  return {.endpoint_url = "http://127.0.0.1:9000",
          .region = "eu-west-3",
          .path_style = true,
          .access_key_id = "AKIDEXAMPLE",
          .secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
          .session_token = "FwoGZXIvYXdzEXAMPLE"};
}

// The daemon's form read back onto the wire, for comparison only.
v1::RemoteAccess WireOf(const FetchAccess& access) {
  v1::RemoteAccess wire;
  wire.set_endpoint_url(access.endpoint_url);
  wire.set_region(access.region);
  wire.set_path_style(access.path_style);
  wire.set_access_key_id(access.access_key_id);
  wire.set_secret_access_key(access.secret_access_key);
  wire.set_session_token(access.session_token);
  return wire;
}

TEST(RemoteAccessAgreement, EveryFieldGoesFromTheSdkOverTheWireToTheDaemon) {
  const v1::RemoteAccess wire = internal::ToProto(EveryField());
  EXPECT_EQ(Unset(wire), std::vector<std::string>())
      << "a field of v1::RemoteAccess the SDK does not send";
  const FetchAccess daemon = FetchAccessOf(wire);
  std::string diff;
  MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(wire, WireOf(daemon)))
      << "a field of v1::RemoteAccess the daemon drops: " << diff;
  EXPECT_TRUE(daemon.signs());
  EXPECT_EQ(daemon.region_or_default(), "eu-west-3");
}

// A daemon that lost every job (it restarted): attaching finds nothing, and
// creating one again is refused after it is recorded.
class RestartedDaemon final : public v1::Loader::Service {
 public:
  grpc::Status CreateJob(grpc::ServerContext*,
                         const v1::CreateJobRequest* request,
                         v1::Job* job) override {
    absl::MutexLock lock(&mu_);
    creates_.push_back(*request);
    if (creates_.size() > 1) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "recorded");
    }
    job->set_id("job-1");
    *job->mutable_spec() = request->spec();
    job->set_batches_per_epoch(10);
    return grpc::Status::OK;
  }
  grpc::Status Consume(grpc::ServerContext*,
                       grpc::ServerReaderWriter<v1::ConsumeResponse,
                                                v1::ConsumeRequest>*) override {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such job");
  }
  std::vector<v1::CreateJobRequest> creates() {
    absl::MutexLock lock(&mu_);
    return creates_;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::CreateJobRequest> creates_ ABSL_GUARDED_BY(mu_);
};

class ReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(target_, grpc::InsecureServerCredentials());
    builder.RegisterService(&daemon_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto client = Client::Connect(target_);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  void TearDown() override {
    client_.reset();
    if (server_ != nullptr) server_->Shutdown();
  }

  // What Consumer::Next() does when the stream broke at batch 13 (1:3):
  // the job's origin as Client::Attach made it, resumed by the Reconnector.
  absl::Status ResumeAt13(Client& client, const JobInfo& job) {
    auto origin = std::make_unique<internal::JobOrigin>(&client.impl(), job,
                                                        ConsumerOptions{});
    internal::Reconnector reconnector(std::move(origin));
    return reconnector
        .Resume(std::make_shared<internal::PositionTracker>(13),
                absl::UnavailableError("the daemon restarted"))
        .status();
  }

  testdata::TempDir dir_{"stoker-reconnect"};
  const std::string target_ = "unix://" + dir_.path() + "/stoker.sock";
  RestartedDaemon daemon_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

JobSpec RemoteSpec() {
  return {.shards = {"s3://data/train-{0..2}.tar"}, .batch_size = 4};
}

TEST_F(ReconnectTest, AJobTheDaemonLostIsCreatedAgainWithItsCredentials) {
  auto job = client_->CreateJob(RemoteSpec(), EveryField());
  ASSERT_TRUE(job.ok()) << job.status();
  const absl::Status resumed = ResumeAt13(*client_, *job);
  EXPECT_TRUE(absl::IsPermissionDenied(resumed)) << resumed;
  const std::vector<v1::CreateJobRequest> creates = daemon_.creates();
  ASSERT_EQ(creates.size(), 2u) << "the job was not created again";
  EXPECT_EQ(Unset(creates[1].remote()), std::vector<std::string>())
      << "the credentials were lost on the re-create";
  EXPECT_TRUE(MessageDifferencer::Equals(creates[1].remote(),
                                         internal::ToProto(EveryField())));
  EXPECT_EQ(creates[1].spec().start_epoch(), 1u);
  EXPECT_EQ(creates[1].spec().start_batch(), 3u);
}

TEST_F(ReconnectTest, AJobAnotherClientCreatedIsCreatedAgainWithoutAny) {
  auto job = client_->CreateJob(RemoteSpec(), EveryField());
  ASSERT_TRUE(job.ok()) << job.status();
  auto other = Client::Connect(target_);
  ASSERT_TRUE(other.ok()) << other.status();
  // The other client attached to it by id: the credentials are not its.
  const absl::Status resumed = ResumeAt13(**other, *job);
  EXPECT_TRUE(absl::IsPermissionDenied(resumed)) << resumed;
  const std::vector<v1::CreateJobRequest> creates = daemon_.creates();
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[1].remote().ByteSizeLong(), 0u);
}

}  // namespace
}  // namespace stoker
