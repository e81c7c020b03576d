// RateMeter: the rate of a cumulative counter over a sliding time window
// (images decoded per second over the last few seconds, say).
//
// Thread-safety: not thread-safe; its owner serializes calls.
#ifndef STOKER_DAEMON_JOBS_RATE_METER_H_
#define STOKER_DAEMON_JOBS_RATE_METER_H_

#include <deque>
#include <utility>

#include "absl/time/time.h"

namespace stoker {

class RateMeter {
 public:
  explicit RateMeter(absl::Duration window = absl::Seconds(5))
      : window_(window) {}

  // The counter's value at `now` (times must not go backwards).
  void Record(absl::Time now, double value);
  // Change per second between the oldest and newest record in the window;
  // 0 with fewer than two.
  double PerSecond() const;

 private:
  absl::Duration window_;
  std::deque<std::pair<absl::Time, double>> points_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_RATE_METER_H_
