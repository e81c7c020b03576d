// Reconnector: opens a new stream for a Consumer whose stream broke with
// UNAVAILABLE (see ConsumerOptions::reconnect_timeout): attaches to its job
// again or, when the daemon lost it, creates it again, trying with backoff
// until the timeout. What the job is and how to reach it is its JobOrigin's.
//
// Ownership: owned by the Consumer; owns the JobOrigin. Thread-safety: not
// thread-safe; used by Consumer::Next(), one thread at a time.
#ifndef STOKER_CLIENT_SRC_RECONNECTOR_H_
#define STOKER_CLIENT_SRC_RECONNECTOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "client/src/consumer_core.h"
#include "client/src/job_origin.h"
#include "client/src/position_tracker.h"
#include "stoker/consumer.h"

namespace stoker::internal {

class Reconnector {
 public:
  explicit Reconnector(std::unique_ptr<JobOrigin> origin)
      : origin_(std::move(origin)) {}

  const ConsumerOptions& options() const { return origin_->options(); }
  const JobOrigin& origin() const { return *origin_; }
  // A stream that resumes where `tracker` (the broken stream's) stands, or
  // the last error once reconnect_timeout has passed (or at once for an
  // error that waiting cannot cure). `why`: how the stream broke.
  absl::StatusOr<std::shared_ptr<ConsumerCore>> Resume(
      std::shared_ptr<PositionTracker> tracker, const absl::Status& why);

 private:
  const std::unique_ptr<JobOrigin> origin_;
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_RECONNECTOR_H_
