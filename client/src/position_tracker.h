// PositionTracker: where a consumer stands, as batch sequence numbers (epoch
// * batches_per_epoch + batch): the first batch not released, and released
// batches beyond it.
//
// Ownership: shared by the successive streams (ConsumerCore) of one
// Consumer, so a batch released on any of them is never handed out again.
// Thread-safety: thread-safe; its mutex is a leaf (nothing else is called
// while it is held).
#ifndef STOKER_CLIENT_SRC_POSITION_TRACKER_H_
#define STOKER_CLIENT_SRC_POSITION_TRACKER_H_

#include <cstdint>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace stoker::internal {

class PositionTracker {
 public:
  explicit PositionTracker(uint64_t first_unreleased)
      : next_unreleased_(first_unreleased) {}
  void Released(uint64_t seq);
  // Batches [from, to) will never come (a broadcast consumer skipped or
  // joined past them): they count as released.
  void Skipped(uint64_t from, uint64_t to);
  bool IsReleased(uint64_t seq) const;
  uint64_t first_unreleased() const;

 private:
  mutable absl::Mutex mu_;
  uint64_t next_unreleased_ ABSL_GUARDED_BY(mu_);
  std::set<uint64_t> released_ahead_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_POSITION_TRACKER_H_
