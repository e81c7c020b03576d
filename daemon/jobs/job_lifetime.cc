// Job: how a job ends and what it reports (see job.h).
#include <algorithm>

#include "daemon/jobs/job.h"

namespace stoker {

void Job::End(const absl::Status& why) {
  Wake wake;
  {
    absl::MutexLock lock(&mu_);
    Stop(JobState::kFailed, why);  // `why` says it was deleted
    wake.listeners = policy_->Listeners();
  }
  Notify(wake);
}

JobState Job::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

absl::Status Job::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

JobCounters Job::Counters() const {
  absl::MutexLock lock(&mu_);
  JobCounters c;
  c.state = state_;
  tally_.Fill(&c);
  c.worker_busy_ns = worker_busy_ns_.load();
  FillConsumerCounters(*policy_, &c);
  if (ring_ != nullptr) {
    c.filling_slots = ring_->CountInState(SlotState::kFilling);
    c.ready_slots =
        static_cast<uint32_t>(policy_->published_count()) - c.leased_slots;
  } else {
    c.leased_slots = 0;
  }
  return c;
}

absl::Duration Job::Unattended(absl::Time now) {
  absl::MutexLock lock(&mu_);
  if (!policy_->consumers().empty()) {
    alone_since_ = absl::InfiniteFuture();
    return absl::ZeroDuration();
  }
  if (alone_since_ == absl::InfiniteFuture()) alone_since_ = now;
  return std::max(absl::ZeroDuration(), now - alone_since_);
}

absl::Time Job::ended_at() const {
  absl::MutexLock lock(&mu_);
  return ended_at_;
}

}  // namespace stoker
