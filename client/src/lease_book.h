// LeaseBook: a consumer's side of its leases (common/lease_table.h): which
// batches Next() handed out and the trainer has neither confirmed nor
// released, claiming a batch for good (Confirm), and why one may not be
// used once the daemon took its lease back.
//
// Ownership: owned by its ConsumerCore; holds the consumer's lease table
// (null from an older daemon: every lease then counts as live), reads the
// stream's final status and moves the shared PositionTracker.
// Thread-safety: thread-safe. mu_ guards the book; it is never held while
// calling another part (the lease table, the stream, the tracker).
#ifndef STOKER_CLIENT_SRC_LEASE_BOOK_H_
#define STOKER_CLIENT_SRC_LEASE_BOOK_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/src/consume_stream.h"
#include "client/src/position_tracker.h"
#include "common/lease_table.h"

namespace stoker::internal {

class LeaseBook {
 public:
  // The leases of job `job_id` (for messages; `batches_per_epoch` numbers
  // its batches) in `table`, on `stream`, which must outlive the book.
  LeaseBook(std::unique_ptr<LeaseTable> table, std::string job_id,
            uint64_t batches_per_epoch,
            std::shared_ptr<PositionTracker> tracker,
            const ConsumeStream* stream);

  // Whether the daemon ended this consumer's leases, and why.
  absl::Status Ended() const;
  // Claims a batch for good: OK (the resume position moves past it), or
  // why it may not be used (the daemon took its lease back).
  absl::Status Confirm(uint32_t slot, uint64_t generation, uint64_t epoch,
                       uint64_t batch);
  // A release of the batch in `slot`: true if it is this consumer's to give
  // back; false if its lease was taken back (if it was handed out
  // unconfirmed, the next Next() says so: TakeUnreported()).
  bool Return(uint32_t slot, uint64_t generation, uint64_t epoch,
              uint64_t batch);
  bool Live(uint32_t slot, uint64_t generation) const;
  // Why batch epoch:batch may not be used: the daemon's reason, or this
  // stream's.
  absl::Status VoidReason(uint64_t epoch, uint64_t batch) const;
  // Next() handed the batch in `slot` out.
  void HandedOut(uint32_t slot, uint64_t generation, uint64_t seq);
  // The stream broke with `why` and is given up: every lease not confirmed
  // is taken back. Returns the error Next() must report instead of
  // resuming: a batch handed out and not confirmed (the trainer may be
  // using it), or one released unconfirmed after its lease was taken back.
  absl::Status Abandon(const absl::Status& why);
  // A batch released unconfirmed after its lease was taken back, once.
  absl::Status TakeUnreported();

 private:
  // Forgets the batch in `slot` as handed out; whether it was.
  bool Forget(uint32_t slot, uint64_t generation);

  // Constant after construction.
  const std::unique_ptr<LeaseTable> table_;  // null from an older daemon
  const std::string job_id_;
  const uint64_t batches_per_epoch_;
  const std::shared_ptr<PositionTracker> tracker_;
  const ConsumeStream* const stream_;

  mutable absl::Mutex mu_;
  // Leases handed out by Next() and neither confirmed nor released: slot ->
  // (generation, seq).
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> out_ ABSL_GUARDED_BY(mu_);
  absl::Status unreported_ ABSL_GUARDED_BY(mu_);
  absl::Status abandoned_ ABSL_GUARDED_BY(mu_);  // why, once given up
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_LEASE_BOOK_H_
