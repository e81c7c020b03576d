// ConsumeStream: one Consume stream of a consumer, from its attach on: a
// reader thread queues the handles the daemon sends, a writer thread sends
// what the consumer queues (credits, releases, reports), so that queuing
// never blocks on the socket (a CUDA host function may release).
//
// Ownership: owned by its ConsumerCore. Thread-safety: thread-safe. mu_
// guards the queues and the stream's state; it is never held while calling
// out (a gRPC read or write, another part of the consumer). Close() is
// idempotent.
//
//   v1::Attached attached;
//   auto stream = ConsumeStream::Attach(stub, client_id, job_id, options,
//                                       &attached);
//   ... map the ring attached.job() names; on failure stream->Abort(why)
//   (*stream)->Start();
//   while ((*stream)->AwaitHandle(deadline)) {
//     auto next = (*stream)->Pop();  // nullopt: ended, see end()
//     ...
//   }
#ifndef STOKER_CLIENT_SRC_CONSUME_STREAM_H_
#define STOKER_CLIENT_SRC_CONSUME_STREAM_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "stoker/consumer.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker::internal {

class ConsumeStream {
 public:
  // Opens a Consume stream through `stub` (`client_id` in its metadata) and
  // attaches to `job_id` with `options`: the stream, not started yet, and
  // the daemon's Attached reply in `*attached`; or the stream's error.
  static absl::StatusOr<std::unique_ptr<ConsumeStream>> Attach(
      v1::Loader::StubInterface* stub, const std::string& client_id,
      const std::string& job_id, const ConsumerOptions& options,
      v1::Attached* attached);
  ~ConsumeStream();  // Close()
  ConsumeStream(const ConsumeStream&) = delete;
  ConsumeStream& operator=(const ConsumeStream&) = delete;

  // Ends a stream attached but not to be used (the job's ring could not be
  // mapped): the daemon's status if it ended with an error (the job may have
  // ended right after attaching, and that says why better), else `why`.
  absl::Status Abort(absl::Status why);
  // Starts the reader and writer threads.
  void Start();
  // Queues `request` for the daemon; dropped once closing or once the daemon
  // ended the stream.
  void Send(v1::ConsumeRequest request);

  // Blocks until a handle is queued or the stream ended (true), or until
  // `deadline` (false).
  bool AwaitHandle(absl::Time deadline);
  // Drops the queued handles (their leases are void).
  void DropQueued();
  struct Popped {
    v1::BatchHandle handle;
    bool open;  // the stream takes requests (its credit was queued)
  };
  // The next queued handle, with a credit queued for it while the stream is
  // open; nullopt when none is queued. A stream the daemon ended with an
  // error took its leases with it: its queue is dropped first.
  std::optional<Popped> Pop();
  // Why Pop() has nothing more: the job's end, or the stream's status.
  struct End {
    bool end_of_job;
    absl::Status status;  // OK until the stream finished
  };
  End end() const;
  // The daemon's status once the stream finished; OK before.
  absl::Status final_status() const;

  // Half-closes the stream, waits for the daemon's status, joins threads.
  void Close();

 private:
  ConsumeStream() = default;
  void ReadLoop();
  void WriteLoop();
  // Waits for the reader to see the end (cancelling the call after a
  // grace), then takes the stream's status.
  void Finish(bool read_done);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HandleReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Open() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after Attach(); the threads after Start().
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriterInterface<v1::ConsumeRequest,
                                                    v1::ConsumeResponse>>
      stream_;
  std::thread reader_;
  std::thread writer_;

  mutable absl::Mutex mu_;
  std::deque<v1::BatchHandle> handles_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ConsumeRequest> outbox_ ABSL_GUARDED_BY(mu_);
  bool end_of_job_ ABSL_GUARDED_BY(mu_) = false;
  bool read_done_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status final_status_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_CONSUME_STREAM_H_
