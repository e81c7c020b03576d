// The bounds of one dataset scan (an ImageFolder walk, tar headers, a
// manifest's rows): a dataset is somebody else's input to a shared daemon,
// so building its index must end, and end with a reason.
#ifndef STOKER_DAEMON_DATASETS_SCAN_LIMITS_H_
#define STOKER_DAEMON_DATASETS_SCAN_LIMITS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "daemon/os/path_policy.h"

namespace stoker {

struct ScanLimits {
  uint64_t max_samples = uint64_t{1} << 24;
  // Directory entries looked at, images or not (a class linked to /usr);
  // tar members and manifest rows.
  uint64_t max_entries = uint64_t{1} << 26;
  int max_depth = 32;  // directories below a class directory
  absl::Duration timeout = absl::Minutes(5);
  // Files and directories read must lie inside its roots.
  const PathPolicy* policy = nullptr;
  // Polled while scanning; true ends the scan (CANCELLED).
  std::function<bool()> cancelled;
};

// limits.policy, or one that allows all but /proc, /sys and /dev.
inline const PathPolicy& PolicyOf(const ScanLimits& limits) {
  static const PathPolicy* const kAnywhere = new PathPolicy();
  return limits.policy != nullptr ? *limits.policy : *kAnywhere;
}

// The clock and the cancellation of one scan.
class ScanClock {
 public:
  explicit ScanClock(const ScanLimits& limits)
      : limits_(limits), deadline_(absl::Now() + limits.timeout) {}

  // CANCELLED or DEADLINE_EXCEEDED (saying how far the scan got, `where`).
  absl::Status Check(const std::string& where) const;

 private:
  const ScanLimits& limits_;
  const absl::Time deadline_;
};

inline absl::Status ScanClock::Check(const std::string& where) const {
  if (limits_.cancelled && limits_.cancelled()) {
    return absl::CancelledError("the dataset scan was cancelled");
  }
  if (absl::Now() > deadline_) {
    return absl::DeadlineExceededError(
        "indexing the dataset took longer than " +
        absl::FormatDuration(limits_.timeout) +
        " (--scan_timeout) and was stopped at " + where);
  }
  return absl::OkStatus();
}

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SCAN_LIMITS_H_
