// PositionTracker and Reconnector: where a consumer stands, and how it
// resumes there on a new stream.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/src/consumer_core.h"
#include "common/batch_wire.h"

namespace stoker::internal {
namespace {

// Reconnecting: the first wait, and the longest.
constexpr absl::Duration kFirstBackoff = absl::Milliseconds(50);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

}  // namespace

void PositionTracker::Released(uint64_t seq) {
  absl::MutexLock lock(&mu_);
  if (seq == next_unreleased_) {
    ++next_unreleased_;
    while (released_ahead_.erase(next_unreleased_) == 1) ++next_unreleased_;
  } else if (seq > next_unreleased_) {
    released_ahead_.insert(seq);
  }
}

void PositionTracker::Skipped(uint64_t from, uint64_t to) {
  absl::MutexLock lock(&mu_);
  if (from <= next_unreleased_) {
    next_unreleased_ = std::max(next_unreleased_, to);
  } else {
    for (uint64_t seq = from; seq < to; ++seq) released_ahead_.insert(seq);
  }
  released_ahead_.erase(released_ahead_.begin(),
                        released_ahead_.lower_bound(next_unreleased_));
  while (released_ahead_.erase(next_unreleased_) == 1) ++next_unreleased_;
}

bool PositionTracker::IsReleased(uint64_t seq) const {
  absl::MutexLock lock(&mu_);
  return seq < next_unreleased_ || released_ahead_.count(seq) > 0;
}

uint64_t PositionTracker::first_unreleased() const {
  absl::MutexLock lock(&mu_);
  return next_unreleased_;
}

absl::StatusOr<std::shared_ptr<ConsumerCore>> Reconnector::Resume(
    const ConsumerCore& broken, const absl::Status& why) {
  const absl::Time deadline =
      absl::Now() + absl::FromChrono(options_.reconnect_timeout);
  absl::Duration backoff = kFirstBackoff;
  std::string job_id = broken.job().id;
  absl::Status last = why;
  for (;;) {
    auto core = ConsumerCore::Open(stub_, client_id_, ring_socket_, job_id,
                                   options_, broken.tracker());
    if (core.ok()) return core;
    last = core.status();
    const JobSpec& spec = broken.job().spec;
    if (absl::IsNotFound(last) &&
        spec.sharing.mode == ConsumerMode::kExclusive) {
      // The daemon lost the job (it restarted): the same spec from where
      // this consumer stands serves exactly the batches not yet released.
      JobSpec again = spec;
      const uint64_t per_epoch =
          std::max<uint64_t>(broken.job().batches_per_epoch, 1);
      const uint64_t first = broken.tracker()->first_unreleased();
      const BatchPlace place = PlaceOf(first, per_epoch);
      again.start = {place.epoch, place.batch};
      auto created = create_job_(again);
      if (created.ok()) {
        job_id = created->id;
        continue;
      }
      last = created.status();
    }
    // Worth waiting for: the daemon coming back, or (exclusive job) the
    // daemon noticing that the old stream is gone. CANCELLED here is a
    // draining daemon cancelling the new attach (this side cancels nothing).
    const bool transient = absl::IsUnavailable(last) ||
                           absl::IsFailedPrecondition(last) ||
                           absl::IsCancelled(last);
    if (!transient) {
      return absl::Status(
          last.code(), absl::StrCat("reconnecting to job ", job_id, " after '",
                                    why.message(), "': ", last.message()));
    }
    if (absl::Now() + backoff > deadline) {
      return absl::Status(
          last.code(),
          absl::StrCat(
              "gave up reconnecting to job ", job_id, " after ",
              absl::FormatDuration(
                  absl::FromChrono(options_.reconnect_timeout)),
              " (ConsumerOptions::reconnect_timeout): ", last.message()));
    }
    wait_(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace stoker::internal
