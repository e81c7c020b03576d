#include "client/src/reconnector.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace stoker::internal {
namespace {

// Reconnecting: the first wait, and the longest.
constexpr absl::Duration kFirstBackoff = absl::Milliseconds(50);
constexpr absl::Duration kMaxBackoff = absl::Seconds(2);

}  // namespace

absl::StatusOr<std::shared_ptr<ConsumerCore>> Reconnector::Resume(
    std::shared_ptr<PositionTracker> tracker, const absl::Status& why) {
  const absl::Duration timeout = absl::FromChrono(options().reconnect_timeout);
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration backoff = kFirstBackoff;
  absl::Status last = why;
  for (;;) {
    auto core = origin_->Attach(tracker);
    if (core.ok()) return core;
    last = core.status();
    if (absl::IsNotFound(last) && origin_->recreatable()) {
      // The daemon lost the job (it restarted): the same spec from where
      // this consumer stands serves exactly the batches not yet released.
      last = origin_->Recreate(tracker->first_unreleased());
      if (last.ok()) continue;
    }
    // Worth waiting for: the daemon coming back, or (exclusive job) the
    // daemon noticing that the old stream is gone. CANCELLED here is a
    // draining daemon cancelling the new attach (this side cancels nothing).
    const bool transient = absl::IsUnavailable(last) ||
                           absl::IsFailedPrecondition(last) ||
                           absl::IsCancelled(last);
    if (!transient) {
      return absl::Status(
          last.code(),
          absl::StrCat("reconnecting to job ", origin_->job_id(), " after '",
                       why.message(), "': ", last.message()));
    }
    if (absl::Now() + backoff > deadline) {
      return absl::Status(
          last.code(),
          absl::StrCat(
              "gave up reconnecting to job ", origin_->job_id(), " after ",
              absl::FormatDuration(timeout),
              " (ConsumerOptions::reconnect_timeout): ", last.message()));
    }
    origin_->AwaitDaemon(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace stoker::internal
