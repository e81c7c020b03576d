// DeliveryPolicy: who receives which batch of a job's ring, and when a slot
// may be refilled. One subclass per way of sharing a job (SharingSpec in
// loader.proto):
//
//   QueuePolicy      exclusive and partition: each batch goes to one
//                    consumer; its release frees the slot; what a consumer
//                    held when it went away goes back to the queue.
//   BroadcastPolicy  every consumer walks the whole sequence at its own
//                    pace; a slot is freed once no consumer still needs it;
//                    a consumer too far behind skips ahead or is evicted.
//
// A policy knows batches only by their sequence number (seq = epoch x
// batches_per_epoch + batch) and slot: the job tells it when a batch starts
// filling (Started) and when it is complete (Published), and frees the
// slots a call lists in Effects::freed. It neither locks nor calls out, so
// that it can be driven directly by a test; Job serialises the calls under
// its mutex and notifies listeners after unlocking.
#ifndef STOKER_DAEMON_JOBS_DELIVERY_POLICY_H_
#define STOKER_DAEMON_JOBS_DELIVERY_POLICY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/lease_table.h"
#include "daemon/jobs/delivery.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// One attached consumer.
struct ConsumerState {
  std::shared_ptr<JobListener> listener;
  ConsumerIdentity who;
  uint64_t id = 0;
  uint32_t credits = 0;
  // Its side of each lease (null in tests that do not care): a lease it
  // claimed counts as released when the policy takes its batches back.
  std::shared_ptr<LeaseTable> leases;
  uint64_t next_seq = 0;                     // broadcast: next batch for it
  std::map<uint32_t, uint64_t> leased;       // slot -> seq
  std::map<uint32_t, absl::Time> leased_at;  // slot -> when delivered
  absl::Status evicted;                      // why it was ended, if it was
  uint64_t delivered = 0;
  uint64_t released = 0;
  uint64_t skipped = 0;
  // Broadcast: since when it has been more than max_lag behind, and since
  // when it has pinned a full ring another consumer waits on.
  absl::Time lagging_since = absl::InfiniteFuture();
  absl::Time pinning_since = absl::InfiniteFuture();
  bool reported = false;
  ConsumerReport report;

  bool active() const { return evicted.ok(); }
};

// What a call changed that the job must act on (after it, in this order).
struct PolicyEffects {
  std::vector<uint32_t> freed;  // slots no consumer needs: refill them
  std::vector<std::shared_ptr<JobListener>> evicted;  // tell them why
  bool wake_all = false;  // batches came back or the start barrier opened
  // Leases a departing consumer had claimed: released without a Release.
  uint32_t claimed = 0;
};

// A batch leased to a consumer.
struct Lease {
  uint64_t seq = 0;
  uint32_t slot = 0;
  LeaseTable* table = nullptr;  // the consumer's, to record the lease in
};

class DeliveryPolicy {
 public:
  struct Params {
    std::string job_id;  // for messages
    SharingConfig sharing;
    uint32_t slots = 0;
    uint64_t batches_per_epoch = 1;
    uint64_t start_seq = 0;      // first batch served (resume)
    uint64_t total_batches = 0;  // UINT64_MAX when the job has no end
    // Broadcast: how long a consumer may stay behind before on_lag applies.
    absl::Duration lag_grace = absl::ZeroDuration();
  };
  virtual ~DeliveryPolicy() = default;

  // The ring's side: batch `seq` began filling (in seq order), and is now
  // complete in `slot`.
  void Started(uint64_t seq);
  void Published(uint64_t seq, uint32_t slot);

  // Attaches a consumer; returns the first batch its position counts from
  // (exclusive and partition: the first batch nobody has released;
  // broadcast: where it joins).
  absl::StatusOr<uint64_t> Attach(std::shared_ptr<JobListener> listener,
                                  const ConsumerIdentity& who, uint32_t credits,
                                  PolicyEffects* effects,
                                  std::shared_ptr<LeaseTable> leases = nullptr);
  // Ends the consumer, recording `why` in its lease table unless it was
  // evicted (then that is why); takes its unclaimed batches back. False if
  // it was not attached.
  bool Detach(const JobListener* listener, PolicyEffects* effects,
              const absl::Status& why =
                  absl::CancelledError("the consumer closed its stream"));
  // The descriptor of the lease table named `token` if `uid` owns it; once.
  absl::StatusOr<UniqueFd> TakeLeaseFd(const std::string& token, uid_t uid);
  void AddCredit(const JobListener* listener, uint32_t credits);
  void Report(const JobListener* listener, const ConsumerReport& report);
  // The next batch for `listener` if it has credit and one is ready.
  // `finished`: every batch of the job has been released.
  Delivery Next(const JobListener* listener, bool finished, absl::Time now,
                Lease* out, absl::Status* ended, PolicyEffects* effects);
  // Whether `listener` is attached and not evicted (a release from anyone
  // else has nothing to free).
  bool IsActive(const JobListener* listener) const;
  // FAILED_PRECONDITION unless `listener` holds `slot`.
  absl::Status Release(const JobListener* listener, uint32_t slot,
                       uint64_t generation, PolicyEffects* effects);
  // Ends every consumer that has held a batch for longer than `limit`
  // (DEADLINE_EXCEEDED, naming the batch), as if it had detached.
  void ExpireLeases(absl::Time now, absl::Duration limit,
                    PolicyEffects* effects);
  // Called about twice a second: broadcast acts on consumers that stayed
  // behind for the grace period.
  virtual void Tick(absl::Time now, PolicyEffects* effects) {}
  // Some consumer has credit but nothing it may receive yet.
  bool Starving() const;

  // For statistics.
  const std::map<const JobListener*, ConsumerState>& consumers() const {
    return consumers_;
  }
  std::vector<std::shared_ptr<JobListener>> Listeners() const;
  size_t published_count() const { return published_.size(); }
  // Broadcast: batches behind the most advanced consumer.
  virtual uint64_t Lag(const ConsumerState& c) const { return 0; }

 protected:
  // A batch in the ring, published and not yet freed.
  struct PublishedBatch {
    uint32_t slot;
    uint32_t releases = 0;  // broadcast: consumers that released it
  };

  explicit DeliveryPolicy(const Params& params);

  // What each way of sharing decides.
  virtual absl::Status CheckAttach() const { return absl::OkStatus(); }
  virtual uint64_t JoinPoint() const = 0;
  virtual void OnAttached(PolicyEffects* effects) {}
  virtual void OnPublished(uint64_t seq) {}
  virtual std::optional<uint64_t> Deliverable(const ConsumerState& c) const = 0;
  virtual bool AllSent(const ConsumerState& c) const = 0;
  virtual void OnLeased(ConsumerState& c, uint64_t seq) = 0;
  virtual void AfterLease(absl::Time now, PolicyEffects* effects) {}
  virtual void OnStarved(const ConsumerState& c, absl::Time now,
                         PolicyEffects* effects) {}
  virtual void OnReleased(uint64_t seq, PolicyEffects* effects) = 0;
  // A consumer went away (detached or evicted) holding `leased`.
  virtual void OnGone(const std::map<uint32_t, uint64_t>& leased,
                      PolicyEffects* effects) = 0;

  // Frees batch `seq`: its slot may be refilled.
  void Free(uint64_t seq, PolicyEffects* effects);
  // Ends `c` for `why` (told to it through its stream and lease table) and
  // takes its batches back.
  void Evict(ConsumerState& c, absl::Status why, PolicyEffects* effects);
  // Takes `c`'s leases back. The ones it claimed count as released (their
  // seqs go to *claimed); the rest are returned.
  std::map<uint32_t, uint64_t> TakeBack(ConsumerState& c,
                                        std::vector<uint64_t>* claimed);
  ConsumerState* Find(const JobListener* listener);
  // "consumer 3 'name'" for messages.
  static std::string Describe(const ConsumerState& c);

  const Params params_;
  std::map<const JobListener*, ConsumerState> consumers_;
  std::map<uint64_t, PublishedBatch> published_;
  std::set<uint64_t> filling_;  // started, not yet published
  uint64_t next_start_;         // the next batch to start filling

 private:
  uint64_t next_consumer_id_ = 1;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_DELIVERY_POLICY_H_
