#include "client/src/consumer_core.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/src/convert.h"
#include "common/batch_wire.h"
#include "common/grpc_status.h"
#include "common/naming.h"

namespace stoker::internal {
namespace {

// How long Close() waits for the daemon to end a half-closed stream before
// cancelling it.
constexpr absl::Duration kCloseGrace = absl::Seconds(5);
// Input accounting: the recent window, and how often the daemon hears of it.
constexpr absl::Duration kRecentWindow = absl::Seconds(10);
constexpr absl::Duration kReportEvery = absl::Seconds(1);

uint64_t Micros(absl::Duration d) {
  return static_cast<uint64_t>(absl::ToInt64Microseconds(d));
}

double Percent(absl::Duration wait, absl::Duration step) {
  const absl::Duration total = wait + step;
  return total <= absl::ZeroDuration()
             ? 0
             : 100.0 * absl::FDivDuration(wait, total);
}

}  // namespace

absl::StatusOr<std::shared_ptr<ConsumerCore>> ConsumerCore::Open(
    v1::Loader::StubInterface* stub, const std::string& client_id,
    const std::string& ring_socket, const std::string& job_id,
    const ConsumerOptions& options, std::shared_ptr<PositionTracker> tracker) {
  std::shared_ptr<ConsumerCore> core(new ConsumerCore());
  core->context_.AddMetadata(kClientMetadataKey, client_id);
  core->stream_ = stub->Consume(&core->context_);
  v1::ConsumeRequest attach;
  attach.mutable_attach()->set_job_id(job_id);
  attach.mutable_attach()->set_name(options.name);
  // With no credit the daemon would never send anything.
  attach.mutable_attach()->set_credits(std::max<uint32_t>(options.prefetch, 1));
  v1::ConsumeResponse reply;
  if (!core->stream_->Write(attach) || !core->stream_->Read(&reply)) {
    const grpc::Status status = core->stream_->Finish();
    return status.ok() ? absl::UnavailableError("the daemon closed the stream")
                       : FromGrpcStatus(status);
  }
  if (!reply.has_attached()) {
    core->context_.TryCancel();
    core->stream_->Finish();
    return absl::InternalError("the daemon did not answer attach first");
  }
  core->job_ = FromProto(reply.attached().job());
  UniqueFd lease_fd;
  auto ring =
      RingMapping::Open(ring_socket, core->job_.id, options.copy_on_write,
                        reply.attached().lease_token(), &lease_fd);
  if (ring.ok() && lease_fd) {
    auto leases = LeaseTable::Map(std::move(lease_fd));
    if (leases.ok()) {
      core->leases_ = *std::move(leases);
    } else {
      ring = leases.status();
    }
  }
  if (!ring.ok()) {
    // The job may have ended right after attaching (its ring is unlinked
    // then): the daemon's status says why, and says it better.
    core->stream_->WritesDone();
    while (core->stream_->Read(&reply)) {
    }
    const grpc::Status status = core->stream_->Finish();
    return status.ok() ? ring.status() : FromGrpcStatus(status);
  }
  core->ring_ = *std::move(ring);
  core->StartAt(BatchSequence(reply.attached().position_epoch(),
                              reply.attached().position_batch(),
                              core->job_.batches_per_epoch),
                std::move(tracker));
  core->reader_ = std::thread([c = core.get()] { c->ReadLoop(); });
  core->writer_ = std::thread([c = core.get()] { c->WriteLoop(); });
  return core;
}

ConsumerCore::~ConsumerCore() { Close(); }

void ConsumerCore::StartAt(uint64_t position,
                           std::shared_ptr<PositionTracker> tracker) {
  tracker_ = tracker != nullptr ? std::move(tracker)
                                : std::make_shared<PositionTracker>(position);
  {
    absl::MutexLock lock(&mu_);
    expected_seq_ = position;
  }
  if (job_.spec.sharing.mode == ConsumerMode::kBroadcast) {
    // Re-attached where the leader stands: what it passed never comes.
    tracker_->Skipped(tracker_->first_unreleased(), position);
  }
}

uint64_t ConsumerCore::Arrived(const v1::BatchHandle& handle) {
  const uint64_t seq =
      BatchSequence(handle.epoch(), handle.batch(), job_.batches_per_epoch);
  if (job_.spec.sharing.mode == ConsumerMode::kBroadcast) {
    if (seq > expected_seq_) tracker_->Skipped(expected_seq_, seq);
    expected_seq_ = std::max(expected_seq_, seq + 1);
  }
  return seq;
}

void ConsumerCore::ReadLoop() {
  v1::ConsumeResponse response;
  while (stream_->Read(&response)) {
    absl::MutexLock lock(&mu_);
    if (response.has_batch()) {
      handles_.push_back(std::move(*response.mutable_batch()));
    } else if (response.has_end_of_job()) {
      end_of_job_ = true;
    }
  }
  absl::MutexLock lock(&mu_);
  read_done_ = true;
}

void ConsumerCore::WriteLoop() {
  for (;;) {
    v1::ConsumeRequest request;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ConsumerCore* c) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return !c->outbox_.empty() || c->closing_ || c->read_done_;
          },
          this));
      if (read_done_ || outbox_.empty()) break;  // closing, all flushed
      request = std::move(outbox_.front());
      outbox_.pop_front();
    }
    stream_->Write(request);
  }
  bool read_done;
  {
    absl::MutexLock lock(&mu_);
    read_done = read_done_;
  }
  if (!read_done) {
    stream_->WritesDone();
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithTimeout(absl::Condition(&read_done_), kCloseGrace)) {
      context_.TryCancel();
      mu_.Await(absl::Condition(&read_done_));
    }
  }
  const grpc::Status status = stream_->Finish();
  absl::MutexLock lock(&mu_);
  final_status_ = FromGrpcStatus(status);
  finished_ = true;
}

void ConsumerCore::Send(v1::ConsumeRequest request) {
  absl::MutexLock lock(&mu_);
  if (closing_ || read_done_) return;
  outbox_.push_back(std::move(request));
}

absl::StatusOr<v1::BatchHandle> ConsumerCore::NextHandle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  // A wait cut short by its deadline goes on in the next call: the time
  // counts as waiting, not as the trainer's step.
  const absl::Time called = waiting_since_.value_or(absl::Now());
  waiting_since_.reset();
  for (;;) {
    const absl::Condition ready(
        +[](ConsumerCore* c) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return !c->handles_.empty() || c->end_of_job_ || c->finished_;
        },
        this);
    if (!mu_.AwaitWithDeadline(ready, deadline)) {
      waiting_since_ = called;
      absl::Status timed_out =
          absl::DeadlineExceededError("no batch arrived in time");
      timed_out.SetPayload(kNextTimeoutPayload, absl::Cord("1"));
      return timed_out;
    }
    // Ended by the daemon (evicted, timed out, stopped answering, job
    // ended): queued batches are void, and the end is never a clean one.
    if (leases_ != nullptr) {
      if (absl::Status ended = leases_->Ended(); !ended.ok()) {
        handles_.clear();
        return ended;
      }
    }
    // A stream the daemon ended with an error (this consumer was detached:
    // lease limit, lag, job deleted, daemon stopping) took its leases with
    // it: batches still queued here may already be another consumer's.
    if (finished_ && !final_status_.ok()) handles_.clear();
    if (handles_.empty()) break;
    v1::BatchHandle handle = std::move(handles_.front());
    handles_.pop_front();
    const bool open = !closing_ && !read_done_;
    if (open) {
      v1::ConsumeRequest credit;
      credit.mutable_credit()->set_credits(1);
      outbox_.push_back(std::move(credit));
    }
    const uint64_t seq = Arrived(handle);
    // A batch released on an earlier stream of this consumer (whose release
    // the daemon never saw) is consumed: give it back, do not hand it out.
    if (tracker_->IsReleased(seq)) {
      if (open) {
        v1::ConsumeRequest release;
        release.mutable_release()->set_slot(handle.slot());
        release.mutable_release()->set_generation(handle.generation());
        outbox_.push_back(std::move(release));
      }
      continue;
    }
    Account(called, absl::Now());
    return handle;
  }
  return EndOfStream();
}

absl::Status ConsumerCore::EndOfStream() const {
  if (end_of_job_) {
    return absl::OutOfRangeError(absl::StrCat(
        "end of job ", job_.id, ": every batch of every epoch was delivered"));
  }
  if (final_status_.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the daemon closed the stream of job ", job_.id));
  }
  return final_status_;
}

void ConsumerCore::Account(absl::Time called, absl::Time now) {
  const absl::Duration wait = now - called;
  const absl::Duration step =
      last_return_ ? called - *last_return_ : absl::ZeroDuration();
  last_return_ = now;
  ++batches_;
  wait_ += wait;
  step_ += step;
  recent_.push_back({now, wait, step});
  recent_wait_ += wait;
  recent_step_ += step;
  while (now - recent_.front().at > kRecentWindow) {
    recent_wait_ -= recent_.front().wait;
    recent_step_ -= recent_.front().step;
    recent_.pop_front();
  }
  if (now - last_report_ >= kReportEvery && !closing_ && !read_done_) {
    last_report_ = now;
    v1::ConsumeRequest request;
    v1::Report* report = request.mutable_report();
    report->set_batches(batches_);
    report->set_wait_us(Micros(wait_));
    report->set_step_us(Micros(step_));
    report->set_recent_wait_us(Micros(recent_wait_));
    report->set_recent_step_us(Micros(recent_step_));
    outbox_.push_back(std::move(request));
  }
}

InputStats ConsumerCore::input_stats() {
  absl::MutexLock lock(&mu_);
  return {batches_, absl::ToDoubleSeconds(wait_), absl::ToDoubleSeconds(step_),
          Percent(wait_, step_), Percent(recent_wait_, recent_step_)};
}

Position ConsumerCore::position() {
  const uint64_t per_epoch = std::max<uint64_t>(job_.batches_per_epoch, 1);
  const uint64_t first = tracker_->first_unreleased();
  const BatchPlace place = PlaceOf(first, per_epoch);
  return {place.epoch, place.batch};
}

void ConsumerCore::Release(uint32_t slot, uint64_t generation, uint64_t epoch,
                           uint64_t batch) {
  bool handed_out = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = out_.find(slot);
    if (it != out_.end() && it->second.first == generation) {
      handed_out = true;
      out_.erase(it);
    }
  }
  if (leases_ != nullptr && !leases_->Claim(slot, generation)) {
    if (handed_out) {
      absl::Status why = VoidReason(epoch, batch);
      absl::MutexLock lock(&mu_);
      if (unreported_.ok()) unreported_ = std::move(why);
    }
    return;
  }
  tracker_->Released(BatchSequence(epoch, batch, job_.batches_per_epoch));
  // Before the daemon may refill it: what this process wrote into its
  // private view of the slot must not show through the next batch. If that
  // cannot be done the slot stays leased (stale bytes are worse; the lease
  // timeout ends the consumer with a clear error).
  if (!ring_->DiscardPrivateCopies(slot)) return;
  v1::ConsumeRequest release;
  release.mutable_release()->set_slot(slot);
  release.mutable_release()->set_generation(generation);
  Send(std::move(release));
}

absl::Status ConsumerCore::Confirm(uint32_t slot, uint64_t generation,
                                   uint64_t epoch, uint64_t batch) {
  if (leases_ == nullptr) return absl::OkStatus();
  const bool claimed = leases_->Claim(slot, generation);
  {
    // Confirmed, or told it is void: either way the trainer knows.
    absl::MutexLock lock(&mu_);
    auto it = out_.find(slot);
    if (it != out_.end() && it->second.first == generation) out_.erase(it);
  }
  if (!claimed) return VoidReason(epoch, batch);
  // Consumed: the resume position moves past it now.
  tracker_->Released(BatchSequence(epoch, batch, job_.batches_per_epoch));
  return absl::OkStatus();
}

bool ConsumerCore::Live(uint32_t slot, uint64_t generation) const {
  return leases_ == nullptr || leases_->Live(slot, generation);
}

absl::Status ConsumerCore::VoidReason(uint64_t epoch, uint64_t batch) {
  absl::Status why = leases_ != nullptr ? leases_->Ended() : absl::OkStatus();
  if (why.ok()) {
    absl::MutexLock lock(&mu_);
    why = !abandoned_.ok() ? abandoned_ : final_status_;
  }
  if (why.ok()) why = absl::DataLossError("the daemon took the lease back");
  return absl::Status(
      why.code(), absl::StrCat("batch ", epoch, ":", batch, " of job ", job_.id,
                               " may not be used, its lease was taken back: ",
                               why.message()));
}

void ConsumerCore::HandedOut(uint32_t slot, uint64_t generation, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  out_[slot] = {generation, seq};
}

absl::Status ConsumerCore::Abandon(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (abandoned_.ok()) abandoned_ = why;
  }
  if (leases_ != nullptr) leases_->RevokeUnclaimed();
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!unreported_.ok()) return std::exchange(unreported_, absl::OkStatus());
    if (leases_ == nullptr || out_.empty()) return absl::OkStatus();
    seq = out_.begin()->second.second;
  }
  const BatchPlace place =
      PlaceOf(seq, std::max<uint64_t>(job_.batches_per_epoch, 1));
  return VoidReason(place.epoch, place.batch);
}

absl::Status ConsumerCore::TakeUnreported() {
  absl::MutexLock lock(&mu_);
  return std::exchange(unreported_, absl::OkStatus());
}

void ConsumerCore::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    closing_ = true;
  }
  if (writer_.joinable()) writer_.join();
  if (reader_.joinable()) reader_.join();
}

}  // namespace stoker::internal
