#include "daemon/api/consume_reactor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/api/proto_convert.h"

namespace stoker {
namespace {

constexpr size_t kMaxConsumerNameBytes = 128;
constexpr uint64_t kMaxDeferredCredits = 1 << 16;

}  // namespace

ConsumeReactor::ConsumeReactor(grpc::CallbackServerContext* context,
                               JobRegistry* registry, ConsumerSet* consumers,
                               ClientLimits* limits, Peer peer)
    : context_(context),
      registry_(registry),
      consumers_(consumers),
      limits_(limits),
      peer_(std::move(peer)),
      client_(peer_.client),
      user_(peer_.credentials ? absl::StrCat("uid ", peer_.credentials->uid)
                              : std::string("an unknown user")),
      link_(std::make_shared<ConsumerLink>(this)),
      last_heard_ns_(absl::GetCurrentTimeNanos()) {
  consumers_->Add(link_);
  StartRead(&request_bytes_);
}

void ConsumeReactor::OnReadDone(bool ok) {
  if (!ok) {
    // The client half-closed (or vanished): nothing more will come.
    FinishOnce(absl::OkStatus());
    return;
  }
  last_heard_ns_ = absl::GetCurrentTimeNanos();
  request_.Clear();
  if (!grpc::SerializationTraits<v1::ConsumeRequest>::Deserialize(
           &request_bytes_, &request_)
           .ok()) {
    FinishOnce(absl::InvalidArgumentError(
        "a Consume message could not be parsed as a stoker.v1.ConsumeRequest"));
    return;
  }
  if (absl::Status status = Handle(request_); !status.ok()) {
    FinishOnce(status);
    return;
  }
  StartRead(&request_bytes_);
}

absl::Status ConsumeReactor::Handle(const v1::ConsumeRequest& request) {
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    job = job_;
  }
  if (request.has_attach()) {
    if (job != nullptr) {
      return absl::FailedPreconditionError("attach sent twice on one stream");
    }
    return HandleAttach(request.attach());
  }
  if (job == nullptr) {
    return absl::FailedPreconditionError(
        "the first message of a Consume stream must be attach");
  }
  switch (request.kind_case()) {
    case v1::ConsumeRequest::kCredit: {
      const uint64_t asked = request.credit().credits();
      const uint64_t granted = limits_->ReserveUpTo(user_, asked);
      if (!Hold(granted)) return absl::OkStatus();  // the stream is ending
      deferred_credits_ = std::min<uint64_t>(
          deferred_credits_ + asked - granted, kMaxDeferredCredits);
      job->AddCredit(link_.get(), static_cast<uint32_t>(granted));
      Pump();
      return absl::OkStatus();
    }
    case v1::ConsumeRequest::kRelease:
      STOKER_RETURN_IF_ERROR(job->Release(link_.get(), request.release().slot(),
                                          request.release().generation()));
      if (deferred_credits_ > 0) {
        // The lease's place goes to a credit that waited for room.
        --deferred_credits_;
        job->AddCredit(link_.get(), 1);
        Pump();
      } else {
        ReturnOne();
      }
      return absl::OkStatus();
    case v1::ConsumeRequest::kReport: {
      const v1::Report& r = request.report();
      job->Report(link_.get(), {r.batches(), r.wait_us(), r.step_us(),
                                r.recent_wait_us(), r.recent_step_us()});
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          "ConsumeRequest holds none of attach, credit, release, report");
  }
}

absl::Status ConsumeReactor::HandleAttach(const v1::Attach& attach) {
  auto job = registry_->Get(attach.job_id());
  if (!job.ok()) return job.status();
  STOKER_RETURN_IF_ERROR(CheckAccess((*job)->access(), peer_, (*job)->id()));
  if (attach.name().size() > kMaxConsumerNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("attach.name is ", attach.name().size(),
                     " bytes, more than ", kMaxConsumerNameBytes));
  }
  STOKER_RETURN_IF_ERROR(limits_->Reserve(user_, attach.credits()));
  if (!Hold(attach.credits())) {
    return absl::CancelledError("the stream ended during its attach");
  }
  {
    // Claim the writer so that no batch can overtake the Attached reply.
    absl::MutexLock lock(&mu_);
    writing_ = true;
  }
  // The consumer's lease table, for the process that attached (ring
  // socket, same uid, with the token sent only on this stream).
  absl::StatusOr<std::shared_ptr<LeaseTable>> leases = nullptr;
  if (peer_.credentials) {
    leases = LeaseTable::Create((*job)->config().slots, peer_.credentials->uid);
  }
  uint64_t first_unreleased = 0;
  absl::Status attached = leases.status();
  if (attached.ok()) {
    attached = (*job)->Attach(link_, {attach.name(), client_}, attach.credits(),
                              &first_unreleased, *leases);
  }
  if (!attached.ok()) {
    ReturnAll(/*settle=*/false);
    if (std::optional<absl::Status> finish = ReleaseWriter()) {
      DetachAndFinish(*finish);
    }
    return attached;
  }
  JobToProto(**job, response_.mutable_attached()->mutable_job());
  const uint64_t per_epoch = (*job)->batches_per_epoch();
  response_.mutable_attached()->set_position_epoch(first_unreleased /
                                                   per_epoch);
  response_.mutable_attached()->set_position_batch(first_unreleased %
                                                   per_epoch);
  if (*leases != nullptr) {
    response_.mutable_attached()->set_lease_token((*leases)->token());
  }
  name_ = attach.name();
  {
    absl::MutexLock lock(&mu_);
    job_ = *job;
  }
  spdlog::debug("job {}: consumer '{}' of client {} attached", (*job)->id(),
                attach.name(), client_);
  Write();
  return absl::OkStatus();
}

void ConsumeReactor::Pump() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      if (finished_ || pending_finish_ || job_ == nullptr) return;
      if (writing_) {
        wake_pending_ = true;
        return;
      }
      writing_ = true;
      wake_pending_ = false;
      job = job_;
    }
    Delivered batch;
    absl::Status ended;
    switch (job->NextDelivery(link_.get(), &batch, &ended)) {
      case Delivery::kBatch:
        response_.Clear();
        DeliveredToHandle(*job, batch, response_.mutable_batch());
        Write();
        return;
      case Delivery::kEndOfJob:
        if (!end_sent_) {
          end_sent_ = true;
          response_.Clear();
          response_.mutable_end_of_job();
          Write();
          return;
        }
        break;
      case Delivery::kEnded:
        if (std::optional<absl::Status> finish = ReleaseWriter()) {
          DetachAndFinish(*finish);
        } else {
          FinishOnce(ended);
        }
        return;
      case Delivery::kNothing:
        break;
    }
    // Nothing was written: give the writer back, and look again if someone
    // knocked meanwhile.
    if (std::optional<absl::Status> finish = ReleaseWriter()) {
      DetachAndFinish(*finish);
      return;
    }
    absl::MutexLock lock(&mu_);
    if (!wake_pending_) return;
  }
}

std::optional<absl::Status> ConsumeReactor::ReleaseWriter() {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (pending_finish_ && !finished_) {
    finished_ = true;
    return pending_finish_;
  }
  return std::nullopt;
}

void ConsumeReactor::FinishOnce(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (finished_ || pending_finish_) return;
    if (writing_) {
      pending_finish_ = status;
      return;
    }
    finished_ = true;
  }
  DetachAndFinish(status);
}

void ConsumeReactor::DetachAndFinish(const absl::Status& status) {
  // Detach before the client can see the status, so that a consumer that
  // re-attaches as soon as its stream ended finds the job free.
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    job = job_;
  }
  absl::Status why = status;
  if (job != nullptr) {
    why = WhyEnded(status, job->id());
    job->Detach(link_.get(), why);
  }
  ReturnAll(/*settle=*/true);
  // A stream that broke is worth a line too: a consumer that stopped
  // answering lost its batches to the next one.
  if (!status.ok() || absl::IsUnavailable(why)) {
    spdlog::info("{}{}consumer of client {} ended: {}",
                 job != nullptr ? "job " + job->id() : std::string(),
                 job != nullptr ? ": " : "", client_, why.message());
  }
  Finish(ToGrpcStatus(status));
}

absl::Status ConsumeReactor::WhyEnded(const absl::Status& status,
                                      const std::string& job_id) const {
  if (!status.ok()) return status;
  const std::string who = absl::StrCat("consumer '", name_, "' of client ",
                                       client_, " of job ", job_id);
  if (!context_->IsCancelled()) {
    return absl::CancelledError(absl::StrCat(who, " closed its stream"));
  }
  const absl::Duration quiet =
      absl::Nanoseconds(absl::GetCurrentTimeNanos() - last_heard_ns_.load());
  const absl::Duration keepalive = consumers_->keepalive();
  if (keepalive > absl::ZeroDuration() && quiet >= keepalive) {
    return absl::UnavailableError(absl::StrCat(
        "keepalive: ", who, " sent nothing and answered no ping for ",
        absl::FormatDuration(absl::Trunc(quiet, absl::Milliseconds(100))),
        " (the process was stopped or stuck; --keepalive=",
        absl::FormatDuration(keepalive),
        "): its connection was closed and its batches not yet confirmed go "
        "to the next consumer"));
  }
  return absl::UnavailableError(
      absl::StrCat("the connection of ", who,
                   " broke (its process exited, or cancelled the stream)"));
}

bool ConsumeReactor::Hold(uint64_t n) {
  {
    absl::MutexLock lock(&held_mu_);
    if (!settled_) {
      outstanding_ += n;
      return true;
    }
  }
  limits_->Return(user_, n);
  return false;
}

bool ConsumeReactor::ReturnOne() {
  {
    absl::MutexLock lock(&held_mu_);
    if (outstanding_ == 0) return false;
    --outstanding_;
  }
  limits_->Return(user_, 1);
  return true;
}

void ConsumeReactor::ReturnAll(bool settle) {
  uint64_t held = 0;
  {
    absl::MutexLock lock(&held_mu_);
    held = std::exchange(outstanding_, 0);
    settled_ = settled_ || settle;
  }
  limits_->Return(user_, held);
}

void ConsumeReactor::Write() {
  response_bytes_.Clear();  // the last write's, done with
  bool own_buffer = false;
  if (!grpc::SerializationTraits<v1::ConsumeResponse>::Serialize(
           response_, &response_bytes_, &own_buffer)
           .ok()) {
    // Only an oversized message fails; a response never is one.
    spdlog::error("a Consume response could not be serialized");
  }
  StartWrite(&response_bytes_);
}

void ConsumeReactor::OnWriteDone(bool ok) {
  if (std::optional<absl::Status> finish = ReleaseWriter()) {
    DetachAndFinish(*finish);
  } else if (!ok) {
    FinishOnce(absl::CancelledError("the consumer went away"));
  } else {
    Pump();
  }
}

void ConsumeReactor::OnDone() {
  link_->Retire();
  ReturnAll(/*settle=*/true);
  consumers_->Remove(link_.get());
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    job = std::move(job_);
  }
  if (job != nullptr) {
    job->Detach(link_.get(), WhyEnded(absl::OkStatus(), job->id()));
    spdlog::debug("job {}: consumer detached", job->id());
  }
  delete this;
}

}  // namespace stoker
