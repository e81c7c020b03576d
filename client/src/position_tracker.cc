#include "client/src/position_tracker.h"

#include <algorithm>

namespace stoker::internal {

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

}  // namespace stoker::internal
