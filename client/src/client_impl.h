// Client::Impl, exposed to the SDK's own sources and tests (not installed).
#ifndef STOKER_CLIENT_SRC_CLIENT_IMPL_H_
#define STOKER_CLIENT_SRC_CLIENT_IMPL_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "stoker/client.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker {

// The largest response the SDK accepts.
inline constexpr int kMaxResponseBytes = 64 << 20;

class STOKER_LOCAL Client::Impl {
 public:
  // `target` is the daemon's address (unix://...); its ring socket lies
  // beside it.
  Impl(std::unique_ptr<v1::Loader::StubInterface> stub,
       const std::string& target,
       std::shared_ptr<grpc::Channel> channel = nullptr);
  v1::Loader::StubInterface* stub() { return stub_.get(); }
  const std::string& ring_socket() const { return ring_socket_; }
  // "<pid>-<random>": how the daemon tells this client from others (its
  // per-client limits, the owner in stats).
  const std::string& client_id() const { return client_id_; }
  // Names this client in the call's metadata.
  void Prepare(grpc::ClientContext* context) const;
  // The calls on the wire messages (Client's methods convert them; the C
  // ABI writes them as JSON). CreateJob makes a relative dataset path
  // absolute in the caller's directory.
  // CreateJob and GetJob give every class name (paged in with
  // GetClassNames past the first 256 KiB); ListJobs gathers every page, its
  // jobs' class names as the daemon sent them (num_classes counts all).
  absl::StatusOr<v1::Job> CreateJob(v1::JobSpec spec,
                                    v1::RemoteAccess remote = {});
  absl::StatusOr<v1::Job> GetJob(std::string_view job_id);
  absl::StatusOr<v1::ListJobsResponse> ListJobs();
  // Pages in the job's class names past those it holds (GetClassNames).
  absl::Status CompleteClassNames(v1::Job* job);
  absl::Status DeleteJob(std::string_view job_id);
  absl::StatusOr<v1::Stats> GetStats();
  // The remote access a job this client created was created with (empty
  // for others), kept until DeleteJob. A consumer attaches by job id alone,
  // and the daemon keeps no credentials: this is where its JobOrigin
  // (client/src/job_origin.h) finds them, to create the job again with
  // them after a daemon restart.
  v1::RemoteAccess RemoteOf(std::string_view job_id) const;
  // Waits up to `up_to` for the daemon to answer on a channel that is not
  // connected (returning as soon as it does: gRPC alone would notice only
  // at its next poll of an idle channel, up to 5 s later); sleeps `up_to`
  // if it is connected or there is no channel (a mock).
  void AwaitConnection(absl::Duration up_to);

 private:
  // One unary call: `call(stub, context, response)` with the context
  // prepared; the response, or the call's error.
  // A refusal for its user's unread answers (kUnreadAnswers: this user's
  // other calls' answers, in flight a moment) is tried again for up to 5 s.
  template <typename Response, typename Call>
  absl::StatusOr<Response> Unary(Call call) {
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    absl::Duration wait = absl::Milliseconds(5);
    for (;;) {
      grpc::ClientContext context;
      Prepare(&context);
      Response response;
      const grpc::Status status = call(*stub(), &context, &response);
      if (status.ok()) return response;
      if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED ||
          status.error_message().find(kUnreadAnswers) == std::string::npos ||
          absl::Now() + wait > deadline) {
        return FromGrpcStatus(status);
      }
      absl::SleepFor(wait);
      wait = std::min(wait * 2, absl::Milliseconds(200));
    }
  }

  std::unique_ptr<v1::Loader::StubInterface> stub_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::string client_id_;
  const std::string ring_socket_;
  mutable absl::Mutex mu_;
  std::map<std::string, v1::RemoteAccess, std::less<>> remote_of_
      ABSL_GUARDED_BY(mu_);
};

// A Client over any stub (tests pass a mock).
std::unique_ptr<Client> MakeClient(std::unique_ptr<Client::Impl> impl);

}  // namespace stoker

#endif  // STOKER_CLIENT_SRC_CLIENT_IMPL_H_
