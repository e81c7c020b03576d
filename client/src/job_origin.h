// JobOrigin: the one owner of what it takes to find a consumer's job again
// once its stream broke: the client it came through (stub, client id, ring
// socket, the wait for a restarted daemon), the consumer's options, and
// what the job was created with, to create it again when the daemon lost it
// (restarted): its spec and its remote access. Python's ExclusiveCursor
// (python/stoker/cursor.py) keeps the same pair.
//
// The spec is the daemon's effective spec, from the consumer's first
// attach (what the job runs, whoever created it). The remote access (the
// trainer's credentials: the daemon drops them once the job is created) is
// the one this Client created the job with (Client::Impl::RemoteOf), taken
// when the consumer attaches; none for a job created elsewhere.
//
// Ownership: owned by the Consumer's Reconnector; the Client must outlive
// it, as it must its Consumers. Thread-safety: not thread-safe; used by
// Consumer::Next(), one thread at a time.
#ifndef STOKER_CLIENT_SRC_JOB_ORIGIN_H_
#define STOKER_CLIENT_SRC_JOB_ORIGIN_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/src/client_impl.h"
#include "client/src/consumer_core.h"
#include "stoker/consumer.h"
#include "stoker/types.h"
#include "stoker/v1/loader.pb.h"

namespace stoker::internal {

class JobOrigin {
 public:
  // The origin of `job` (as its first attach showed it) for a consumer
  // attached through `client` with `options`.
  JobOrigin(Client::Impl* client, const JobInfo& job, ConsumerOptions options);

  const std::string& job_id() const { return job_id_; }
  const ConsumerOptions& options() const { return options_; }
  const v1::RemoteAccess& remote() const { return remote_; }

  // A new stream on the job, resuming where `tracker` stands.
  absl::StatusOr<std::shared_ptr<ConsumerCore>> Attach(
      std::shared_ptr<PositionTracker> tracker) const;
  // Whether the job may be created again when the daemon lost it: an
  // exclusive job (its one consumer says where it stands).
  bool recreatable() const;
  // Creates the job again, with its spec and remote access, to start at
  // batch sequence `first_unreleased`: the batches not yet consumed. Later
  // Attach()es go to the new job.
  absl::Status Recreate(uint64_t first_unreleased);
  // Waits up to `up_to` for the daemon to answer (returns sooner if it
  // does).
  void AwaitDaemon(absl::Duration up_to);

 private:
  // Constant after construction.
  Client::Impl* const client_;
  const ConsumerOptions options_;
  const JobSpec spec_;
  const uint64_t batches_per_epoch_;
  const v1::RemoteAccess remote_;

  std::string job_id_;  // the job now: a new one after Recreate()
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_JOB_ORIGIN_H_
