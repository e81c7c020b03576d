#include "daemon/jobs/rate_meter.h"

namespace stoker {

void RateMeter::Record(absl::Time now, double value) {
  points_.emplace_back(now, value);
  // Keep one point at or beyond the window's start, so the rate always
  // spans the whole window once there is that much history.
  while (points_.size() > 2 && now - points_[1].first >= window_) {
    points_.pop_front();
  }
}

double RateMeter::PerSecond() const {
  if (points_.size() < 2) return 0;
  const double seconds =
      absl::ToDoubleSeconds(points_.back().first - points_.front().first);
  if (seconds <= 0) return 0;
  return (points_.back().second - points_.front().second) / seconds;
}

}  // namespace stoker
