#include "client/src/job_origin.h"

#include <algorithm>
#include <utility>

#include "client/src/convert.h"
#include "common/batch_wire.h"
#include "common/status_macros.h"

namespace stoker::internal {

JobOrigin::JobOrigin(Client::Impl* client, const JobInfo& job,
                     ConsumerOptions options)
    : client_(client),
      options_(std::move(options)),
      spec_(job.spec),
      batches_per_epoch_(job.batches_per_epoch),
      remote_(client->RemoteOf(job.id)),
      job_id_(job.id) {}

absl::StatusOr<std::shared_ptr<ConsumerCore>> JobOrigin::Attach(
    std::shared_ptr<PositionTracker> tracker) const {
  return ConsumerCore::Open(client_->stub(), client_->client_id(),
                            client_->ring_socket(), job_id_, options_,
                            std::move(tracker));
}

bool JobOrigin::recreatable() const {
  return spec_.sharing.mode == ConsumerMode::kExclusive;
}

absl::Status JobOrigin::Recreate(uint64_t first_unreleased) {
  JobSpec again = spec_;
  const BatchPlace place =
      PlaceOf(first_unreleased, std::max<uint64_t>(batches_per_epoch_, 1));
  again.start = {place.epoch, place.batch};
  STOKER_ASSIGN_OR_RETURN(v1::Job job,
                          client_->CreateJob(ToProto(again), remote_));
  job_id_ = job.id();
  return absl::OkStatus();
}

void JobOrigin::AwaitDaemon(absl::Duration up_to) {
  client_->AwaitConnection(up_to);
}

}  // namespace stoker::internal
