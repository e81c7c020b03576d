#include "stoker/client.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/src/client_impl.h"
#include "client/src/consumer_core.h"
#include "client/src/convert.h"
#include "client/src/job_origin.h"
#include "client/src/reconnector.h"
#include "common/grpc_status.h"
#include "common/naming.h"
#include "common/socket_access.h"
#include "common/status_macros.h"

namespace stoker {

static_assert(std::string_view(kDefaultTarget) == kDaemonDefaultTarget,
              "the SDK and the daemon must default to the same socket");

std::unique_ptr<Client> MakeClient(std::unique_ptr<Client::Impl> impl) {
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

namespace {

std::string NewClientId() {
  std::random_device random;
  return absl::StrFormat("%d-%08x", ::getpid(), random());
}

// A relative dataset path, taken from the caller's directory.
absl::Status MakeAbsolute(std::string* path) {
  // A remote shard (s3://, http(s)://) is a URL, not a path.
  if (path->empty() || path->starts_with('/') ||
      path->find("://") != std::string::npos) {
    return absl::OkStatus();
  }
  std::error_code error;
  const auto absolute = std::filesystem::absolute(*path, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot make dataset path '", *path, "' absolute: ", error.message()));
  }
  *path = absolute.lexically_normal().string();
  return absl::OkStatus();
}

}  // namespace

Client::Impl::Impl(std::unique_ptr<v1::Loader::StubInterface> stub,
                   const std::string& target,
                   std::shared_ptr<grpc::Channel> channel)
    : stub_(std::move(stub)),
      channel_(std::move(channel)),
      client_id_(NewClientId()),
      ring_socket_(RingSocketPath(SocketPathFromTarget(target))) {}

void Client::Impl::Prepare(grpc::ClientContext* context) const {
  context->AddMetadata(kClientMetadataKey, client_id_);
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    std::string_view target, std::chrono::milliseconds timeout) {
  absl::StatusOr<std::string> normalized = NormalizeSocketTarget(target);
  if (!normalized.ok()) return normalized.status();
  grpc::ChannelArguments args;
  // A Unix socket connect that fails costs one syscall: retry it every
  // 100-250 ms rather than after gRPC's 1-120 s backoff, so that a client
  // (and every channel sharing its subchannel) is back within a quarter of a
  // second of a restarted daemon listening.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 250);
  // The daemon bounds every response (a ListJobs page at about 3 MiB, stats
  // at about 100 KiB a job); gRPC's default 4 MiB would still be too small
  // for the stats of a daemon holding hundreds of jobs.
  args.SetMaxReceiveMessageSize(kMaxResponseBytes);
  auto channel = grpc::CreateCustomChannel(
      *normalized, grpc::InsecureChannelCredentials(), args);
  // A timeout beyond a year is no deadline: the clock's time_point would
  // overflow (milliseconds::max() becomes a deadline in the past).
  constexpr std::chrono::milliseconds kYear = std::chrono::hours(24 * 365);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() +
                                 std::min(timeout, kYear))) {
    const std::string path = SocketPathFromTarget(*normalized);
    std::string why = ExplainSocketAccess(path);
    if (why.empty()) why = "it does not answer";
    return absl::UnavailableError(
        absl::StrCat("cannot reach stokerd at ", path, ": ", why));
  }
  auto stub = v1::Loader::NewStub(channel);
  return MakeClient(
      std::make_unique<Impl>(std::move(stub), *normalized, std::move(channel)));
}

void Client::Impl::AwaitConnection(absl::Duration up_to) {
  if (channel_ == nullptr ||
      channel_->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) {
    absl::SleepFor(up_to);
    return;
  }
  channel_->WaitForConnected(absl::ToChronoTime(absl::Now() + up_to));
}

absl::StatusOr<v1::Job> Client::Impl::CreateJob(v1::JobSpec spec,
                                                v1::RemoteAccess remote) {
  // The daemon resolves paths in its own directory, not the caller's.
  v1::DatasetSpec* dataset = spec.mutable_dataset();
  STOKER_RETURN_IF_ERROR(MakeAbsolute(dataset->mutable_path()));
  STOKER_RETURN_IF_ERROR(MakeAbsolute(dataset->mutable_manifest()));
  for (std::string& shard : *dataset->mutable_shards()) {
    STOKER_RETURN_IF_ERROR(MakeAbsolute(&shard));
  }
  v1::CreateJobRequest request;
  *request.mutable_spec() = std::move(spec);
  *request.mutable_remote() = std::move(remote);
  STOKER_ASSIGN_OR_RETURN(
      v1::Job job, Unary<v1::Job>([&](auto& stub, auto* context, auto* job) {
        return stub.CreateJob(context, request, job);
      }));
  STOKER_RETURN_IF_ERROR(CompleteClassNames(&job));
  if (request.remote().ByteSizeLong() > 0) {
    absl::MutexLock lock(&mu_);
    remote_of_[job.id()] = request.remote();
  }
  return job;
}

v1::RemoteAccess Client::Impl::RemoteOf(std::string_view job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = remote_of_.find(job_id);
  return it == remote_of_.end() ? v1::RemoteAccess() : it->second;
}

absl::StatusOr<v1::Job> Client::Impl::GetJob(std::string_view job_id) {
  v1::GetJobRequest request;
  request.set_job_id(std::string(job_id));
  STOKER_ASSIGN_OR_RETURN(
      v1::Job job, Unary<v1::Job>([&](auto& stub, auto* context, auto* job) {
        return stub.GetJob(context, request, job);
      }));
  STOKER_RETURN_IF_ERROR(CompleteClassNames(&job));
  return job;
}

absl::Status Client::Impl::CompleteClassNames(v1::Job* job) {
  v1::GetClassNamesRequest request;
  request.set_job_id(job->id());
  while (static_cast<uint64_t>(job->class_names_size()) < job->num_classes()) {
    request.set_offset(job->class_names_size());
    STOKER_ASSIGN_OR_RETURN(
        v1::ClassNames page,
        Unary<v1::ClassNames>([&](auto& stub, auto* context, auto* names) {
          return stub.GetClassNames(context, request, names);
        }));
    if (page.class_names().empty()) {
      return absl::InternalError(
          absl::StrCat("job ", job->id(), ": stokerd sent no class names from ",
                       request.offset(), " of ", job->num_classes()));
    }
    for (std::string& name : *page.mutable_class_names()) {
      job->add_class_names(std::move(name));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::ListJobsResponse> Client::Impl::ListJobs() {
  v1::ListJobsResponse all;
  v1::ListJobsRequest request;
  do {
    STOKER_ASSIGN_OR_RETURN(v1::ListJobsResponse page,
                            Unary<v1::ListJobsResponse>(
                                [&](auto& stub, auto* context, auto* response) {
                                  return stub.ListJobs(context, request,
                                                       response);
                                }));
    for (v1::Job& job : *page.mutable_jobs()) {
      *all.add_jobs() = std::move(job);
    }
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return all;
}

absl::Status Client::Impl::DeleteJob(std::string_view job_id) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = remote_of_.find(job_id); it != remote_of_.end()) {
      remote_of_.erase(it);
    }
  }
  v1::DeleteJobRequest request;
  request.set_job_id(std::string(job_id));
  return Unary<v1::DeleteJobResponse>(
             [&](auto& stub, auto* context, auto* response) {
               return stub.DeleteJob(context, request, response);
             })
      .status();
}

absl::StatusOr<v1::Stats> Client::Impl::GetStats() {
  return Unary<v1::Stats>([](auto& stub, auto* context, auto* stats) {
    return stub.GetStats(context, v1::GetStatsRequest(), stats);
  });
}

absl::StatusOr<JobInfo> Client::CreateJob(const JobSpec& spec) {
  STOKER_ASSIGN_OR_RETURN(v1::Job job,
                          impl_->CreateJob(internal::ToProto(spec)));
  return internal::FromProto(job);
}

absl::StatusOr<JobInfo> Client::CreateJob(const JobSpec& spec,
                                          const RemoteAccess& remote) {
  STOKER_ASSIGN_OR_RETURN(
      v1::Job job,
      impl_->CreateJob(internal::ToProto(spec), internal::ToProto(remote)));
  return internal::FromProto(job);
}

absl::StatusOr<JobInfo> Client::GetJob(std::string_view job_id) {
  STOKER_ASSIGN_OR_RETURN(v1::Job job, impl_->GetJob(job_id));
  return internal::FromProto(job);
}

absl::StatusOr<std::vector<JobInfo>> Client::ListJobs() {
  STOKER_ASSIGN_OR_RETURN(v1::ListJobsResponse response, impl_->ListJobs());
  std::vector<JobInfo> jobs;
  for (v1::Job& job : *response.mutable_jobs()) {
    // A job that ended meanwhile keeps the names the page gave.
    const absl::Status complete = impl_->CompleteClassNames(&job);
    if (!complete.ok() && !absl::IsNotFound(complete)) return complete;
    jobs.push_back(internal::FromProto(job));
  }
  return jobs;
}

absl::Status Client::DeleteJob(std::string_view job_id) {
  return impl_->DeleteJob(job_id);
}

absl::StatusOr<DaemonStats> Client::GetStats() {
  STOKER_ASSIGN_OR_RETURN(v1::Stats stats, impl_->GetStats());
  return internal::FromProto(stats);
}

absl::StatusOr<std::unique_ptr<Consumer>> Client::Attach(
    std::string_view job_id, const ConsumerOptions& options) {
  auto core = internal::ConsumerCore::Open(impl_->stub(), impl_->client_id(),
                                           impl_->ring_socket(),
                                           std::string(job_id), options);
  if (!core.ok()) return core.status();
  // What the job was created with and where it lives, for reconnecting.
  auto origin = std::make_unique<internal::JobOrigin>(impl_.get(),
                                                      (*core)->job(), options);
  return std::unique_ptr<Consumer>(
      new Consumer(*std::move(core),
                   std::make_unique<internal::Reconnector>(std::move(origin))));
}

}  // namespace stoker
