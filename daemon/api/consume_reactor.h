// The server side of one Consume stream.
//
// ConsumeReactor owns the stream's state and deletes itself in OnDone(). It
// reads requests one after another (attach first, then credits and
// releases) and writes handles one at a time whenever the job has a batch
// and the consumer has credit. Jobs and the daemon reach the reactor only
// through its ConsumerLink, which makes sure the reactor is not deleted
// while they call it. No lock is held across a gRPC call (StartWrite,
// StartRead, Finish), since reactions may run inline in them.
#ifndef STOKER_DAEMON_API_CONSUME_REACTOR_H_
#define STOKER_DAEMON_API_CONSUME_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "daemon/api/client_limits.h"
#include "daemon/api/peer.h"
#include "daemon/jobs/job.h"
#include "daemon/jobs/job_registry.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker {

class ConsumeReactor;

// A handle on a live reactor that outlives it.
class ConsumerLink : public JobListener {
 public:
  explicit ConsumerLink(ConsumeReactor* reactor) : reactor_(reactor) {}
  void OnDeliverable() override;
  void Shutdown(const absl::Status& why);
  // Called by the reactor as it is done: waits out calls in progress and
  // turns later ones into no-ops.
  void Retire();

 private:
  ConsumeReactor* Acquire();
  void Unacquire();

  absl::Mutex mu_;
  ConsumeReactor* reactor_ ABSL_GUARDED_BY(mu_);
  int users_ ABSL_GUARDED_BY(mu_) = 0;
};

// The live streams of a daemon, so shutdown can end them all.
class ConsumerSet {
 public:
  // `keepalive`: the daemon's --keepalive (zero: none), for the reason a
  // consumer that stopped answering is given.
  explicit ConsumerSet(absl::Duration keepalive = absl::ZeroDuration())
      : keepalive_(keepalive) {}
  absl::Duration keepalive() const { return keepalive_; }
  void Add(std::shared_ptr<ConsumerLink> link);
  void Remove(const ConsumerLink* link);
  void ShutdownAll(const absl::Status& why);

 private:
  const absl::Duration keepalive_;
  absl::Mutex mu_;
  std::set<std::shared_ptr<ConsumerLink>> links_ ABSL_GUARDED_BY(mu_);
};

// The stream is raw (grpc::ByteBuffer both ways; see LoaderService) so that
// a message that does not parse ends the stream with INVALID_ARGUMENT
// saying so: gRPC's own parsing would make it look like the client's
// half-close, and end the stream with OK.
class ConsumeReactor
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `client` names the peer (ClientOf); its outstanding batches count
  // against `limits`.
  ConsumeReactor(grpc::CallbackServerContext* context, JobRegistry* registry,
                 ConsumerSet* consumers, ClientLimits* limits, Peer peer);

  // Sends what can be sent now; safe from any thread.
  void Pump();
  // Ends the stream with `status`, at once or, while the writer role is held
  // (a write in flight, or a Pump() looking for one), when it is given back.
  void FinishOnce(const absl::Status& status);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  absl::Status Handle(const v1::ConsumeRequest& request);
  void DetachAndFinish(const absl::Status& status);
  // What the consumer is told (in its lease table) when its stream ends
  // with `status`: that status, or for a stream that ended without one, how
  // it ended (closed by the client, or a connection that stopped answering).
  absl::Status WhyEnded(const absl::Status& status,
                        const std::string& job_id) const;
  // Gives up the writer role; returns the status to finish with if a
  // FinishOnce() came while it was held.
  std::optional<absl::Status> ReleaseWriter();
  absl::Status HandleAttach(const v1::Attach& attach);
  // Serializes response_ and starts writing it (the writer role is held).
  void Write();
  // Adds `n` units reserved in limits_ to outstanding_; once settled, gives
  // them back instead and returns false.
  bool Hold(uint64_t n);
  // Takes one unit off outstanding_ (a released lease) and gives it back;
  // false if none was held.
  bool ReturnOne();
  // Gives back everything held; with `settle`, for good.
  void ReturnAll(bool settle);

  grpc::CallbackServerContext* const context_;
  JobRegistry* const registry_;
  ConsumerSet* const consumers_;
  ClientLimits* const limits_;
  const Peer peer_;
  const std::string client_;
  const std::string user_;  // "uid 1000": the key of its limits
  // Credits granted plus batches leased and not released on this stream,
  // given back to limits_ before the client can see the stream's status
  // (so that its next stream finds them free), and not taken again after.
  absl::Mutex held_mu_;
  uint64_t outstanding_ ABSL_GUARDED_BY(held_mu_) = 0;
  bool settled_ ABSL_GUARDED_BY(held_mu_) = false;
  // Credit asked for beyond the client's limit: granted as releases make
  // room (the consumer simply receives nothing more until then). Touched
  // only by the reading side.
  uint64_t deferred_credits_ = 0;
  const std::shared_ptr<ConsumerLink> link_;
  std::string name_;  // the consumer's, once attached (reading side)
  // When a message last came from the client (absl::GetCurrentTimeNanos).
  std::atomic<int64_t> last_heard_ns_;
  grpc::ByteBuffer request_bytes_;   // owned by the read in flight
  v1::ConsumeRequest request_;       // request_bytes_, parsed
  v1::ConsumeResponse response_;     // owned by the write in flight
  grpc::ByteBuffer response_bytes_;  // response_, serialized
  bool end_sent_ = false;            // touched only by the writer

  absl::Mutex mu_;
  std::shared_ptr<Job> job_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_CONSUME_REACTOR_H_
