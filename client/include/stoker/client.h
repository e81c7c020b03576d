// Client: a connection to a stokerd.
//
// Creates, inspects and deletes jobs, and attaches consumers to them. All
// calls are synchronous; errors come back as absl::Status with the daemon's
// code and message (INVALID_ARGUMENT naming the bad field, NOT_FOUND, ...).
//
//   auto client = stoker::Client::Connect("unix:///run/stoker/stoker.sock");
//   if (!client.ok()) return client.status();  // UNAVAILABLE: no daemon
//   stoker::JobSpec spec{.dataset_path = "/data/imagenet/train",
//                        .batch_size = 256, .epochs = 90};
//   auto job = (*client)->CreateJob(spec);
//   auto consumer = (*client)->Attach(job->id);
//
// Thread-safety: thread-safe. The Client must outlive its Consumers.
#ifndef STOKER_CLIENT_H_
#define STOKER_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "stoker/consumer.h"
#include "stoker/types.h"

namespace stoker {

// How a job reaches remote shards (loader.proto's RemoteAccess).
struct RemoteAccess {
  std::string endpoint_url;   // s3:// URLs: an S3-compatible store; "": AWS
  std::string region;         // "": us-east-1
  bool path_style = false;    // endpoint/bucket/key
  std::string access_key_id;  // "": unsigned requests
  std::string secret_access_key;
  std::string session_token;
};

class STOKER_API Client {
 public:
  // Connects to the daemon at `target`, waiting up to `timeout` for it. The
  // socket may be given as a path ("/run/stoker/stoker.sock", or relative
  // to the current directory), "unix:PATH" or "unix://PATH".
  // INVALID_ARGUMENT for an address that is not a Unix socket; UNAVAILABLE
  // if the daemon does not answer, with the cause when the filesystem shows
  // one (no socket there, a directory or group that keeps you out). A
  // timeout of a year or more (milliseconds::max() included) waits as long
  // as it takes.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      std::string_view target = kDefaultTarget,
      std::chrono::milliseconds timeout = std::chrono::seconds(5));

  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A relative `spec.dataset_path` is taken from the caller's current
  // directory (the daemon runs elsewhere).
  absl::StatusOr<JobInfo> CreateJob(const JobSpec& spec);
  // A job over remote shards (s3://, http(s):// URLs in spec.shards),
  // fetched with `remote`: this process's own credentials, which the
  // daemon uses while the job is created and then drops.
  absl::StatusOr<JobInfo> CreateJob(const JobSpec& spec,
                                    const RemoteAccess& remote);
  absl::StatusOr<JobInfo> GetJob(std::string_view job_id);
  absl::StatusOr<std::vector<JobInfo>> ListJobs();
  absl::Status DeleteJob(std::string_view job_id);
  absl::StatusOr<DaemonStats> GetStats();

  // Attaches to the job and maps its ring read-only. FAILED_PRECONDITION if
  // the job is exclusive and already has a consumer; RESOURCE_EXHAUSTED if
  // the prefetch would take this client past the daemon's lease limit.
  absl::StatusOr<std::unique_ptr<Consumer>> Attach(
      std::string_view job_id, const ConsumerOptions& options = {});

  class STOKER_LOCAL Impl;                      // internal
  STOKER_LOCAL Impl& impl() { return *impl_; }  // internal (the C ABI)

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  friend std::unique_ptr<Client> MakeClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker

#endif  // STOKER_CLIENT_H_
