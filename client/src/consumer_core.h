// ConsumerCore: the machinery behind a Consumer: one Consume stream, a reader
// thread that queues incoming handles, a writer thread that sends credits and
// releases (so releasing never blocks on the socket, and a CUDA host function
// may release), and the job's read-only ring mapping.
//
// Thread-safety: thread-safe. Shared by the Consumer and every Batch it
// handed out; Close() is idempotent.
#ifndef STOKER_CLIENT_SRC_CONSUMER_CORE_H_
#define STOKER_CLIENT_SRC_CONSUMER_CORE_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/src/ring_mapping.h"
#include "common/lease_table.h"
#include "stoker/consumer.h"
#include "stoker/types.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker::internal {

// Marks the DEADLINE_EXCEEDED of a Next() that ran out of its own time (see
// stoker::IsNextTimeout), as opposed to the daemon's lease timeout.
inline constexpr char kNextTimeoutPayload[] = "stoker.dev/next-timeout";

// Where a consumer stands, as batch sequence numbers (epoch *
// batches_per_epoch + batch): the first batch not released, and released
// batches beyond it. Shared by the successive streams of one Consumer, so a
// batch released on any of them is never handed out again.
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

  // Leases (common/lease_table.h). Confirm() claims a batch for good: OK,
  // or why it may not be used (the daemon took its lease back). Without a
  // lease table (an older daemon), every lease counts as live.
  absl::Status Confirm(uint32_t slot, uint64_t generation, uint64_t epoch,
                       uint64_t batch);
  bool Live(uint32_t slot, uint64_t generation) const;
  // Why batch epoch:batch may not be used: the daemon's reason, or this
  // stream's.
  absl::Status VoidReason(uint64_t epoch, uint64_t batch);
  // Next() handed the batch in `slot` out.
  void HandedOut(uint32_t slot, uint64_t generation, uint64_t seq);
  // The stream broke with `why` and is given up: every lease not confirmed
  // is taken back (its batch will be delivered again). Returns the error
  // Next() must report instead of resuming: a batch handed out and not
  // confirmed (the trainer may be using it), or one released unconfirmed
  // after its lease was taken back.
  absl::Status Abandon(const absl::Status& why);
  // A batch released unconfirmed after its lease was taken back, once.
  absl::Status TakeUnreported();
  Position position();
  InputStats input_stats();
  const std::shared_ptr<PositionTracker>& tracker() const { return tracker_; }
  // Half-closes the stream, waits for the daemon's status, joins threads.
  void Close();

  const JobInfo& job() const { return job_; }
  const RingMapping& ring() const { return *ring_; }

 private:
  ConsumerCore() = default;
  // Where the consumer starts: `position` (the Attached reply's), with
  // `tracker` if it resumes an earlier stream.
  void StartAt(uint64_t position, std::shared_ptr<PositionTracker> tracker);
  // The seq of a handle just received; broadcast: counts what it jumped
  // over as skipped.
  uint64_t Arrived(const v1::BatchHandle& handle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReadLoop();
  // Why NextHandle() has nothing more: the end of the job, or the stream's
  // status.
  absl::Status EndOfStream() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteLoop();
  void Send(v1::ConsumeRequest request);
  // Accounts one Next() that started at `called` and returned at `now`;
  // queues a report for the daemon about once a second.
  void Account(absl::Time called, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  JobInfo job_;
  std::unique_ptr<RingMapping> ring_;
  std::unique_ptr<LeaseTable> leases_;  // null from an older daemon
  // Broadcast: the batch expected next; anything below a batch received is
  // skipped (a lagging consumer moved ahead, or one re-attached at the
  // leader).
  uint64_t expected_seq_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriterInterface<v1::ConsumeRequest,
                                                    v1::ConsumeResponse>>
      stream_;
  std::thread reader_;
  std::thread writer_;

  absl::Mutex mu_;
  std::deque<v1::BatchHandle> handles_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ConsumeRequest> outbox_ ABSL_GUARDED_BY(mu_);
  bool end_of_job_ ABSL_GUARDED_BY(mu_) = false;
  bool read_done_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<PositionTracker> tracker_;
  // Input accounting (see InputStats): totals, and per-batch samples for
  // the recent window.
  struct Sample {
    absl::Time at;
    absl::Duration wait;
    absl::Duration step;
  };
  uint64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration wait_ ABSL_GUARDED_BY(mu_);
  absl::Duration step_ ABSL_GUARDED_BY(mu_);
  std::deque<Sample> recent_ ABSL_GUARDED_BY(mu_);
  absl::Duration recent_wait_ ABSL_GUARDED_BY(mu_);
  absl::Duration recent_step_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> last_return_ ABSL_GUARDED_BY(mu_);
  // Set while a NextHandle() that ran out of time is to be continued.
  std::optional<absl::Time> waiting_since_ ABSL_GUARDED_BY(mu_);
  absl::Time last_report_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Leases handed out by Next() and neither confirmed nor released: slot ->
  // (generation, seq).
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> out_ ABSL_GUARDED_BY(mu_);
  absl::Status unreported_ ABSL_GUARDED_BY(mu_);
  absl::Status abandoned_ ABSL_GUARDED_BY(mu_);  // why, once given up
};

// Opens a new stream for a Consumer whose stream broke with UNAVAILABLE:
// see ConsumerOptions::reconnect_timeout.
class Reconnector {
 public:
  using CreateJobFn = std::function<absl::StatusOr<JobInfo>(const JobSpec&)>;
  // Waits before the next try (at most the duration given; may return as
  // soon as the daemon answers).
  using WaitFn = std::function<void(absl::Duration)>;
  Reconnector(v1::Loader::StubInterface* stub, std::string client_id,
              std::string ring_socket, ConsumerOptions options,
              CreateJobFn create_job, WaitFn wait = absl::SleepFor)
      : stub_(stub),
        client_id_(std::move(client_id)),
        ring_socket_(std::move(ring_socket)),
        options_(std::move(options)),
        create_job_(std::move(create_job)),
        wait_(std::move(wait)) {}

  const ConsumerOptions& options() const { return options_; }
  // A stream that resumes where `broken` stood, or the last error once
  // reconnect_timeout has passed (or at once for an error that waiting
  // cannot cure).
  absl::StatusOr<std::shared_ptr<ConsumerCore>> Resume(
      const ConsumerCore& broken, const absl::Status& why);

 private:
  v1::Loader::StubInterface* const stub_;
  const std::string client_id_;
  const std::string ring_socket_;
  const ConsumerOptions options_;
  const CreateJobFn create_job_;
  const WaitFn wait_;
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_CONSUMER_CORE_H_
