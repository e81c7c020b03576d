#include "daemon/api/loader_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "daemon/api/proto_convert.h"
#include "daemon/api/stats.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/os/group.h"
#include "daemon/spec/job_spec.h"

namespace stoker {

LoaderService::LoaderService(JobRegistry* registry, WorkerPool* pool,
                             ConsumerSet* consumers, ClientLimits* limits,
                             const PeerTable* peers)
    : registry_(registry),
      pool_(pool),
      consumers_(consumers),
      limits_(limits),
      peers_(peers),
      started_(std::chrono::steady_clock::now()) {}

grpc::ServerUnaryReactor* LoaderService::CreateJob(
    grpc::CallbackServerContext* context, const v1::CreateJobRequest* request,
    v1::Job* response) {
  const Peer peer = PeerOf(*context, peers_);
  AnswerReactor* reactor = Open(peer);
  if (reactor->refused()) return reactor;
  auto config = ValidateJobSpec(request->spec());
  if (!config.ok()) {
    spdlog::info("CreateJob refused: {}", config.status().message());
    reactor->Finish(ToGrpcStatus(config.status()));
    return reactor;
  }
  if (!peer.credentials) {
    reactor->Finish(ToGrpcStatus(CheckAccess(JobAccess{}, peer, "(new)")));
    return reactor;
  }
  FetchAccess access = FetchAccessOf(request->remote());
  config->owner = peer.client;
  config->owner_uid = peer.credentials->uid;
  config->owner_files = {peer.credentials->uid, peer.credentials->gid,
                         peer.credentials->groups};
  config->owner_process = IdentifyProcess(peer.credentials->pid);
  if (absl::Status can = CheckCanActAs(config->owner_files); !can.ok()) {
    reactor->Finish(ToGrpcStatus(can));
    return reactor;
  }
  if (!config->access_group.empty()) {
    auto gid = ResolveGroup(config->access_group);
    if (!gid.ok()) {
      reactor->Finish(ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrCat("access_group: ", gid.status().message()))));
      return reactor;
    }
    config->access_gid = *gid;
  }
  const uid_t uid = peer.credentials->uid;
  // The trainer's credentials travel beside the config, as far as the
  // registry's index of the dataset.
  absl::Status posted = creates_.Post(uid, [this, context, reactor, response,
                                            config = *std::move(config),
                                            access = std::move(access)] {
    auto job = registry_->Create(config, access,
                                 [context] { return context->IsCancelled(); });
    if (!job.ok()) {
      spdlog::info("CreateJob on {} for uid {} failed: {}", DatasetName(config),
                   config.owner_uid, job.status().message());
      reactor->Finish(ToGrpcStatus(job.status()));
      return;
    }
    JobToProto(**job, response);
    reactor->Answer(*response, grpc::Status::OK);
  });
  if (!posted.ok()) reactor->Finish(ToGrpcStatus(posted));
  return reactor;
}

absl::StatusOr<std::shared_ptr<Job>> LoaderService::AccessibleJob(
    const grpc::CallbackServerContext& context, const std::string& id) const {
  auto job = registry_->Get(id);
  if (!job.ok()) return job.status();
  STOKER_RETURN_IF_ERROR(
      CheckAccess((*job)->access(), PeerOf(context, peers_), (*job)->id()));
  return job;
}

grpc::ServerUnaryReactor* LoaderService::GetJob(
    grpc::CallbackServerContext* context, const v1::GetJobRequest* request,
    v1::Job* response) {
  AnswerReactor* reactor = Open(PeerOf(*context, peers_));
  if (reactor->refused()) return reactor;
  auto job = AccessibleJob(*context, request->job_id());
  if (job.ok()) JobToProto(**job, response);
  reactor->Answer(*response, ToGrpcStatus(job.status()));
  return reactor;
}

grpc::ServerUnaryReactor* LoaderService::ListJobs(
    grpc::CallbackServerContext* context, const v1::ListJobsRequest* request,
    v1::ListJobsResponse* response) {
  const Peer peer = PeerOf(*context, peers_);
  AnswerReactor* reactor = Open(peer);
  if (reactor->refused()) return reactor;
  const uint32_t page_size = request->page_size() == 0
                                 ? kDefaultJobsPage
                                 : std::min(request->page_size(), kMaxJobsPage);
  std::vector<std::shared_ptr<Job>> jobs = registry_->List();
  std::sort(jobs.begin(), jobs.end(),
            [](const auto& a, const auto& b) { return a->id() < b->id(); });
  // Jobs the caller may not use are not listed. A page ends at page_size
  // jobs or past kJobsPageBytes; the token is the last job's id, so that
  // jobs created or ended meanwhile shift nothing.
  size_t bytes = 0;
  for (const auto& job : jobs) {
    if (job->id() <= request->page_token() || !MayAccess(job->access(), peer)) {
      continue;
    }
    if (static_cast<uint32_t>(response->jobs_size()) == page_size ||
        bytes > kJobsPageBytes) {
      response->set_next_page_token(response->jobs().rbegin()->id());
      break;
    }
    v1::Job* out = response->add_jobs();
    JobToProto(*job, out);
    bytes += out->ByteSizeLong();
  }
  reactor->Answer(*response, grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* LoaderService::GetClassNames(
    grpc::CallbackServerContext* context,
    const v1::GetClassNamesRequest* request, v1::ClassNames* response) {
  AnswerReactor* reactor = Open(PeerOf(*context, peers_));
  if (reactor->refused()) return reactor;
  auto job = AccessibleJob(*context, request->job_id());
  if (job.ok()) ClassNamesToProto(**job, request->offset(), response);
  reactor->Answer(*response, ToGrpcStatus(job.status()));
  return reactor;
}

grpc::ServerUnaryReactor* LoaderService::DeleteJob(
    grpc::CallbackServerContext* context, const v1::DeleteJobRequest* request,
    v1::DeleteJobResponse* response) {
  AnswerReactor* reactor = Open(PeerOf(*context, peers_));
  if (reactor->refused()) return reactor;
  auto job = AccessibleJob(*context, request->job_id());
  absl::Status status = job.status();
  if (status.ok()) status = registry_->Delete(request->job_id());
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* LoaderService::GetStats(
    grpc::CallbackServerContext* context, const v1::GetStatsRequest* request,
    v1::Stats* response) {
  // Per-job figures only for the jobs the caller may use.
  const Peer peer = PeerOf(*context, peers_);
  AnswerReactor* reactor = Open(peer);
  if (reactor->refused()) return reactor;
  CollectStats(
      *pool_, *registry_, started_,
      [&peer](const Job& job) { return MayAccess(job.access(), peer); },
      response);
  reactor->Answer(*response, grpc::Status::OK);
  return reactor;
}

AnswerReactor* LoaderService::Open(const Peer& peer) {
  return AnswerReactor::Open(
      &answers_, peer.credentials ? std::optional<uid_t>(peer.credentials->uid)
                                  : std::nullopt);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
LoaderService::Consume(grpc::CallbackServerContext* context) {
  return new ConsumeReactor(context, registry_, consumers_, limits_,
                            PeerOf(*context, peers_));
}

}  // namespace stoker
