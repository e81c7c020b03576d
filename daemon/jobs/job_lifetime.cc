// Job: how a job ends, its periodic checks, and what it reports (see
// job.h).
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/log.h"
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

void Job::Tick(absl::Time now, absl::Duration lease_limit) {
  Wake wake;
  {
    absl::MutexLock lock(&mu_);
    if (!running()) return;
    if (CheckRing()) {
      wake.listeners = policy_->Listeners();
    } else {
      PolicyEffects effects;
      if (lease_limit > absl::ZeroDuration()) {
        policy_->ExpireLeases(now, lease_limit, &effects);
      }
      policy_->Tick(now, &effects);
      if (effects.evicted.empty() && effects.freed.empty()) return;
      Apply(effects);
      wake.listeners = policy_->Listeners();
      wake.work = true;
    }
  }
  Notify(wake);
}

bool Job::CheckRing() {
  if (!running() || !ring_->DeletedElsewhere()) return false;
  const absl::Status why = absl::AbortedError(absl::StrCat(
      "job ", id_, " stopped: its ring /dev/shm/", ring_->name(),
      " was deleted by another process (a cleanup of /dev/shm, or systemd's "
      "RemoveIPC= for stokerd's user); its batches cannot be served. Create "
      "the job again, and keep /dev/shm/stoker-* out of such cleanups"));
  spdlog::error("{}", why.message());
  Stop(JobState::kFailed, why);
  return true;
}

absl::StatusOr<UniqueFd> Job::RingFd() {
  Wake wake;
  absl::StatusOr<UniqueFd> fd;
  {
    absl::MutexLock lock(&mu_);
    if (CheckRing()) wake.listeners = policy_->Listeners();
    if (!running()) {
      // The job ended (its ring is unlinked then): say why, as its stream
      // would (a failed job's DATA_LOSS naming the file).
      fd = !error_.ok()
               ? error_
               : absl::NotFoundError(absl::StrCat(
                     "the ring of job ", id_, " is gone (the job has ended)"));
    } else if (UniqueFd dup(::fcntl(ring_->read_only_fd(), F_DUPFD_CLOEXEC, 0));
               dup) {
      fd = std::move(dup);
    } else {
      fd = absl::ResourceExhaustedError(
          absl::StrCat("stokerd cannot hand out the ring of job ", id_, ": ",
                       std::strerror(errno), " (stokerd's own descriptors)"));
    }
  }
  Notify(wake);
  return fd;
}

absl::StatusOr<UniqueFd> Job::TakeLeaseFd(const std::string& token, uid_t uid) {
  absl::MutexLock lock(&mu_);
  return policy_->TakeLeaseFd(token, uid);
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

bool Job::Attended() const {
  absl::MutexLock lock(&mu_);
  return !policy_->consumers().empty();
}

absl::Time Job::ended_at() const {
  absl::MutexLock lock(&mu_);
  return ended_at_;
}

}  // namespace stoker
