// ConsumerCore: the machinery behind a Consumer for one stream: the job's
// read-only ring mapping, and three parts, each its own class:
//   ConsumeStream  the Consume stream, its reader and writer threads, the
//                  handles received and the requests to send;
//   LeaseBook      the leases: batches handed out, confirmed, void;
//   InputAccount   where the trainer's time goes (InputStats).
// The resume position (PositionTracker) is shared with the Consumer's later
// streams.
//
// Thread-safety: thread-safe. Shared by the Consumer and every Batch it
// handed out; Close() is idempotent. NextHandle() is called by Next(), one
// thread at a time.
//
// Lock order: each part has its own mutex and holds it only inside its own
// methods; no part calls another, or back into the core, while holding it.
// The one nesting: arrival_mu_ (here) is held while calling the
// PositionTracker, whose mutex is a leaf. So: arrival_mu_ ->
// PositionTracker::mu_; ConsumeStream::mu_, LeaseBook::mu_ and
// InputAccount::mu_ are leaves taken alone.
#ifndef STOKER_CLIENT_SRC_CONSUMER_CORE_H_
#define STOKER_CLIENT_SRC_CONSUMER_CORE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/src/consume_stream.h"
#include "client/src/input_account.h"
#include "client/src/lease_book.h"
#include "client/src/position_tracker.h"
#include "client/src/ring_mapping.h"
#include "common/lease_table.h"
#include "stoker/consumer.h"
#include "stoker/types.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker::internal {

// Marks the DEADLINE_EXCEEDED of a Next() that ran out of its own time (see
// stoker::IsNextTimeout), as opposed to the daemon's lease timeout.
inline constexpr char kNextTimeoutPayload[] = "stoker.dev/next-timeout";

class ConsumerCore {
 public:
  // Attaches to `job_id` through `stub` and maps the job's ring (asking
  // `ring_socket` for it). `client_id` names the client to the daemon
  // (request metadata). Without a `tracker`, the position starts where the
  // daemon says the job stands; with one, batches it has seen released are
  // released again at once instead of being handed out.
  static absl::StatusOr<std::shared_ptr<ConsumerCore>> Open(
      v1::Loader::StubInterface* stub, const std::string& client_id,
      const std::string& ring_socket, const std::string& job_id,
      const ConsumerOptions& options,
      std::shared_ptr<PositionTracker> tracker = nullptr);
  ~ConsumerCore();  // Close()
  ConsumerCore(const ConsumerCore&) = delete;
  ConsumerCore& operator=(const ConsumerCore&) = delete;

  // Blocks for the next handle until `deadline` (DEADLINE_EXCEEDED then,
  // nothing lost); see Consumer::Next() for the other errors.
  absl::StatusOr<v1::BatchHandle> NextHandle(
      absl::Time deadline = absl::InfiniteFuture());
  // Queues the release of a slot; a no-op once the stream is closed. Moves
  // the resume position past the batch when it is the first unreleased one.
  // A batch whose lease was taken back is not this consumer's to release:
  // if it was handed out unconfirmed, the next Next() says so.
  void Release(uint32_t slot, uint64_t generation, uint64_t epoch,
               uint64_t batch);

  // Leases: see LeaseBook.
  absl::Status Confirm(uint32_t slot, uint64_t generation, uint64_t epoch,
                       uint64_t batch) {
    return leases_.Confirm(slot, generation, epoch, batch);
  }
  bool Live(uint32_t slot, uint64_t generation) const {
    return leases_.Live(slot, generation);
  }
  absl::Status VoidReason(uint64_t epoch, uint64_t batch) const {
    return leases_.VoidReason(epoch, batch);
  }
  void HandedOut(uint32_t slot, uint64_t generation, uint64_t seq) {
    leases_.HandedOut(slot, generation, seq);
  }
  absl::Status Abandon(const absl::Status& why) { return leases_.Abandon(why); }
  absl::Status TakeUnreported() { return leases_.TakeUnreported(); }

  Position position() const;
  InputStats input_stats() const { return input_.stats(); }
  const std::shared_ptr<PositionTracker>& tracker() const { return tracker_; }
  // Half-closes the stream, waits for the daemon's status, joins threads.
  void Close() { stream_->Close(); }

  const JobInfo& job() const { return job_; }
  const RingMapping& ring() const { return *ring_; }

 private:
  // Starts at `position` (the Attached reply's), with `tracker` if it
  // resumes an earlier stream.
  ConsumerCore(JobInfo job, std::unique_ptr<ConsumeStream> stream,
               std::unique_ptr<RingMapping> ring,
               std::unique_ptr<LeaseTable> leases, uint64_t position,
               std::shared_ptr<PositionTracker> tracker);
  // The seq of a handle just received; broadcast: counts what it jumped
  // over as skipped.
  uint64_t Arrived(const v1::BatchHandle& handle);
  // Why NextHandle() has nothing more: the end of the job, or the stream's
  // status.
  absl::Status EndOfStream() const;

  // Constant after construction.
  const JobInfo job_;
  const std::unique_ptr<ConsumeStream> stream_;
  const std::unique_ptr<RingMapping> ring_;
  const std::shared_ptr<PositionTracker> tracker_;
  // The parts (their own locks).
  LeaseBook leases_;
  InputAccount input_;

  absl::Mutex arrival_mu_;
  // Broadcast: the batch expected next; anything below a batch received is
  // skipped (a lagging consumer moved ahead, or one re-attached at the
  // leader).
  uint64_t expected_seq_ ABSL_GUARDED_BY(arrival_mu_);
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_CONSUMER_CORE_H_
