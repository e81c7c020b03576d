// QueuePolicy: exclusive and partition jobs. Batches go out in seq order,
// each to one consumer (exclusive: the only one; partition: whichever asks
// first); a release frees the slot. What a consumer held when it went away
// (detached, or evicted for holding a batch past the lease limit) returns
// to the front of the queue, in order, for the next consumer.
#ifndef STOKER_DAEMON_JOBS_QUEUE_POLICY_H_
#define STOKER_DAEMON_JOBS_QUEUE_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>

#include "daemon/jobs/delivery_policy.h"

namespace stoker {

class QueuePolicy : public DeliveryPolicy {
 public:
  explicit QueuePolicy(const Params& params);

 private:
  bool exclusive() const {
    return params_.sharing.mode == ConsumerMode::kExclusive;
  }
  absl::Status CheckAttach() const override;
  uint64_t JoinPoint() const override;
  void OnPublished(uint64_t seq) override { ready_.insert(seq); }
  std::optional<uint64_t> Deliverable(const ConsumerState& c) const override;
  bool AllSent(const ConsumerState& c) const override;
  void OnLeased(ConsumerState& c, uint64_t seq) override;
  void OnReleased(uint64_t seq, PolicyEffects* effects) override;
  void OnGone(const std::map<uint32_t, uint64_t>& leased,
              PolicyEffects* effects) override;

  // The next batch never sent, and the published batches nobody holds
  // (requeued ones first, being older).
  uint64_t next_send_;
  std::set<uint64_t> ready_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_QUEUE_POLICY_H_
