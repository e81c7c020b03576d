// BroadcastPolicy: every consumer receives every batch, decoded once. Each
// walks the sequence at its own pace (ConsumerState::next_seq); a slot is
// freed once no attached consumer still needs its batch. Nothing is
// delivered or freed before min_consumers attached (the start barrier), so
// that they all start at the first batch.
//
// A consumer is behind when it is more than max_lag batches behind the
// most advanced one, or when the ring is full of batches it has not
// released while another consumer waits. Behind for longer than lag_grace,
// it skips ahead (on_lag SKIP) or is evicted (DETACH). The grace is what
// keeps consumers that keep pace from being evicted: with a ring of few
// slots, one that has just released its batches and is about to receive
// the next is, for a moment, as far behind as the ring is long.
//
// A consumer that joins after the barrier opened starts at the most
// advanced consumer's next batch, so that it is behind nobody on arrival;
// with nobody else attached, at the oldest batch the ring still holds.
#ifndef STOKER_DAEMON_JOBS_BROADCAST_POLICY_H_
#define STOKER_DAEMON_JOBS_BROADCAST_POLICY_H_

#include <cstdint>
#include <map>
#include <optional>

#include "absl/strings/string_view.h"
#include "daemon/jobs/delivery_policy.h"

namespace stoker {

class BroadcastPolicy : public DeliveryPolicy {
 public:
  explicit BroadcastPolicy(const Params& params) : DeliveryPolicy(params) {}

  uint64_t Lag(const ConsumerState& c) const override;

 private:
  bool barrier_open() const {
    return attached_ever_ >= params_.sharing.min_consumers;
  }
  uint64_t JoinPoint() const override;
  void OnAttached(PolicyEffects* effects) override;
  std::optional<uint64_t> Deliverable(const ConsumerState& c) const override;
  bool AllSent(const ConsumerState& c) const override {
    return c.next_seq >= params_.total_batches;
  }
  void OnLeased(ConsumerState& c, uint64_t seq) override { ++c.next_seq; }
  void AfterLease(absl::Time now, PolicyEffects* effects) override {
    EnforceLag(now, effects);
  }
  void OnStarved(const ConsumerState& c, absl::Time now,
                 PolicyEffects* effects) override {
    RelievePinnedRing(now, effects);
  }
  void Tick(absl::Time now, PolicyEffects* effects) override;
  void OnReleased(uint64_t seq, PolicyEffects* effects) override;
  void OnGone(const std::map<uint32_t, uint64_t>& leased,
              PolicyEffects* effects) override {
    FreeUnneeded(effects);  // the others no longer wait for it
  }

  // Applies the lag policy to consumers that stayed more than max_lag
  // batches behind the leader for the grace period.
  void EnforceLag(absl::Time now, PolicyEffects* effects);
  // A consumer has credit but its next batch cannot be decoded because
  // every slot holds an older batch: once the consumer holding the oldest
  // one has done so for the grace period, it skips to the waiter (SKIP, if
  // it has unsent batches) or is evicted.
  void RelievePinnedRing(absl::Time now, PolicyEffects* effects);
  // Whether `c` has been behind (since *since, set now if it was not) for
  // the grace period.
  bool BehindTooLong(absl::Time* since, absl::Time now) const;
  // Frees every batch no active consumer still needs.
  void FreeUnneeded(PolicyEffects* effects);
  absl::Status LagError(const ConsumerState& c, uint64_t lag,
                        absl::string_view why) const;
  uint64_t Leader() const;
  static uint64_t OldestHeld(const ConsumerState& c);

  uint64_t attached_ever_ = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_BROADCAST_POLICY_H_
