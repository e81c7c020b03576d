// LoaderService: the stoker.v1.Loader gRPC service on the callback API.
//
// Unary calls that only read daemon memory answer inline. CreateJob scans a
// dataset and reserves shared memory, so it runs on a CreateRunner's thread
// (a few at once, shared between users) instead of a gRPC callback thread.
// Consume gets a ConsumeReactor.
#ifndef STOKER_DAEMON_API_LOADER_SERVICE_H_
#define STOKER_DAEMON_API_LOADER_SERVICE_H_

#include <chrono>
#include <memory>
#include <string>

#include "daemon/api/answers.h"
#include "daemon/api/client_limits.h"
#include "daemon/api/consume_reactor.h"
#include "daemon/api/create_runner.h"
#include "daemon/api/peer.h"
#include "daemon/jobs/job_registry.h"
#include "daemon/jobs/worker_pool.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker {

// Every method on the callback API; Consume raw (see ConsumeReactor).
using LoaderCallbackService = v1::Loader::WithCallbackMethod_CreateJob<
    v1::Loader::WithCallbackMethod_GetJob<
        v1::Loader::WithCallbackMethod_ListJobs<
            v1::Loader::WithCallbackMethod_GetClassNames<
                v1::Loader::WithCallbackMethod_DeleteJob<
                    v1::Loader::WithCallbackMethod_GetStats<
                        v1::Loader::WithRawCallbackMethod_Consume<
                            v1::Loader::Service>>>>>>>;

// ListJobs pages: jobs per page by default and at most, and the bytes
// after which a page ends (a job is at most the 64 KiB request that made
// it, escaped, plus 256 KiB of class names: a page stays under gRPC's
// default 4 MiB receive limit).
inline constexpr uint32_t kDefaultJobsPage = 100;
inline constexpr uint32_t kMaxJobsPage = 1000;
inline constexpr size_t kJobsPageBytes = size_t{2} << 20;

class LoaderService final : public LoaderCallbackService {
 public:
  // `peers` knows each connection's user; every job call is checked
  // against the job's owner and access group.
  LoaderService(JobRegistry* registry, WorkerPool* pool, ConsumerSet* consumers,
                ClientLimits* limits, const PeerTable* peers);

  grpc::ServerUnaryReactor* CreateJob(grpc::CallbackServerContext* context,
                                      const v1::CreateJobRequest* request,
                                      v1::Job* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const v1::GetJobRequest* request,
                                   v1::Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const v1::ListJobsRequest* request,
                                     v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* GetClassNames(
      grpc::CallbackServerContext* context,
      const v1::GetClassNamesRequest* request,
      v1::ClassNames* response) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* context,
                                      const v1::DeleteJobRequest* request,
                                      v1::DeleteJobResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const v1::GetStatsRequest* request,
                                     v1::Stats* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Consume(
      grpc::CallbackServerContext* context) override;

 private:
  // The job `id`, if it exists and the caller may use it (NOT_FOUND,
  // PERMISSION_DENIED).
  absl::StatusOr<std::shared_ptr<Job>> AccessibleJob(
      const grpc::CallbackServerContext& context, const std::string& id) const;
  // A unary call's reactor, its answer counted against `peer`'s user (see
  // answers.h); refused() when the user is at its bound.
  AnswerReactor* Open(const Peer& peer);
  JobRegistry* const registry_;
  WorkerPool* const pool_;
  ConsumerSet* const consumers_;
  ClientLimits* const limits_;
  const PeerTable* const peers_;
  const std::chrono::steady_clock::time_point started_;
  CreateRunner creates_;
  AnswerLedger answers_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_LOADER_SERVICE_H_
