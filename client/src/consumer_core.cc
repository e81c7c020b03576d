#include "client/src/consumer_core.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/src/convert.h"
#include "common/batch_wire.h"
#include "common/status_macros.h"

namespace stoker::internal {

absl::StatusOr<std::shared_ptr<ConsumerCore>> ConsumerCore::Open(
    v1::Loader::StubInterface* stub, const std::string& client_id,
    const std::string& ring_socket, const std::string& job_id,
    const ConsumerOptions& options, std::shared_ptr<PositionTracker> tracker) {
  v1::Attached attached;
  STOKER_ASSIGN_OR_RETURN(
      std::unique_ptr<ConsumeStream> stream,
      ConsumeStream::Attach(stub, client_id, job_id, options, &attached));
  JobInfo job = FromProto(attached.job());
  UniqueFd lease_fd;
  auto ring = RingMapping::Open(ring_socket, job.id, options.copy_on_write,
                                attached.lease_token(), &lease_fd);
  std::unique_ptr<LeaseTable> leases;
  if (ring.ok() && lease_fd) {
    auto mapped = LeaseTable::Map(std::move(lease_fd));
    if (mapped.ok()) {
      leases = *std::move(mapped);
    } else {
      ring = mapped.status();
    }
  }
  // The job may have ended right after attaching (its ring is unlinked
  // then): the daemon's status says why, and says it better.
  if (!ring.ok()) return stream->Abort(ring.status());
  const uint64_t position =
      BatchSequence(attached.position_epoch(), attached.position_batch(),
                    job.batches_per_epoch);
  std::shared_ptr<ConsumerCore> core(
      new ConsumerCore(std::move(job), std::move(stream), *std::move(ring),
                       std::move(leases), position, std::move(tracker)));
  core->stream_->Start();
  return core;
}

ConsumerCore::ConsumerCore(JobInfo job, std::unique_ptr<ConsumeStream> stream,
                           std::unique_ptr<RingMapping> ring,
                           std::unique_ptr<LeaseTable> leases,
                           uint64_t position,
                           std::shared_ptr<PositionTracker> tracker)
    : job_(std::move(job)),
      stream_(std::move(stream)),
      ring_(std::move(ring)),
      tracker_(tracker != nullptr
                   ? std::move(tracker)
                   : std::make_shared<PositionTracker>(position)),
      leases_(std::move(leases), job_.id, job_.batches_per_epoch, tracker_,
              stream_.get()),
      expected_seq_(position) {
  if (job_.spec.sharing.mode == ConsumerMode::kBroadcast) {
    // Re-attached where the leader stands: what it passed never comes.
    tracker_->Skipped(tracker_->first_unreleased(), position);
  }
}

ConsumerCore::~ConsumerCore() { Close(); }

uint64_t ConsumerCore::Arrived(const v1::BatchHandle& handle) {
  const uint64_t seq =
      BatchSequence(handle.epoch(), handle.batch(), job_.batches_per_epoch);
  if (job_.spec.sharing.mode == ConsumerMode::kBroadcast) {
    absl::MutexLock lock(&arrival_mu_);
    if (seq > expected_seq_) tracker_->Skipped(expected_seq_, seq);
    expected_seq_ = std::max(expected_seq_, seq + 1);
  }
  return seq;
}

absl::StatusOr<v1::BatchHandle> ConsumerCore::NextHandle(absl::Time deadline) {
  const absl::Time called = input_.BeginWait(absl::Now());
  for (;;) {
    if (!stream_->AwaitHandle(deadline)) {
      input_.WaitCutShort(called);
      absl::Status timed_out =
          absl::DeadlineExceededError("no batch arrived in time");
      timed_out.SetPayload(kNextTimeoutPayload, absl::Cord("1"));
      return timed_out;
    }
    // Ended by the daemon (evicted, timed out, stopped answering, job
    // ended): queued batches are void, and the end is never a clean one.
    if (absl::Status ended = leases_.Ended(); !ended.ok()) {
      stream_->DropQueued();
      return ended;
    }
    std::optional<ConsumeStream::Popped> next = stream_->Pop();
    if (!next) break;
    const uint64_t seq = Arrived(next->handle);
    // A batch released on an earlier stream of this consumer (whose release
    // the daemon never saw) is consumed: give it back, do not hand it out.
    if (tracker_->IsReleased(seq)) {
      if (next->open) {
        v1::ConsumeRequest release;
        release.mutable_release()->set_slot(next->handle.slot());
        release.mutable_release()->set_generation(next->handle.generation());
        stream_->Send(std::move(release));
      }
      continue;
    }
    if (auto report = input_.Account(called, absl::Now(), next->open)) {
      stream_->Send(*std::move(report));
    }
    return std::move(next->handle);
  }
  return EndOfStream();
}

absl::Status ConsumerCore::EndOfStream() const {
  const ConsumeStream::End end = stream_->end();
  if (end.end_of_job) {
    return absl::OutOfRangeError(absl::StrCat(
        "end of job ", job_.id, ": every batch of every epoch was delivered"));
  }
  if (end.status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the daemon closed the stream of job ", job_.id));
  }
  return end.status;
}

Position ConsumerCore::position() const {
  const uint64_t per_epoch = std::max<uint64_t>(job_.batches_per_epoch, 1);
  const uint64_t first = tracker_->first_unreleased();
  const BatchPlace place = PlaceOf(first, per_epoch);
  return {place.epoch, place.batch};
}

void ConsumerCore::Release(uint32_t slot, uint64_t generation, uint64_t epoch,
                           uint64_t batch) {
  if (!leases_.Return(slot, generation, epoch, batch)) return;
  tracker_->Released(BatchSequence(epoch, batch, job_.batches_per_epoch));
  // Before the daemon may refill it: what this process wrote into its
  // private view of the slot must not show through the next batch. If that
  // cannot be done the slot stays leased (stale bytes are worse; the lease
  // timeout ends the consumer with a clear error).
  if (!ring_->DiscardPrivateCopies(slot)) return;
  v1::ConsumeRequest release;
  release.mutable_release()->set_slot(slot);
  release.mutable_release()->set_generation(generation);
  stream_->Send(std::move(release));
}

}  // namespace stoker::internal
