// BroadcastPolicy: every consumer receives every batch, decoded once. Each
// walks the sequence at its own pace (ConsumerState::next_seq); a slot is
// freed once no attached consumer still needs its batch. Nothing is
// delivered or freed before min_consumers attached (the start barrier), so
// that they all start at the first batch. A consumer more than max_lag
// batches behind the most advanced one skips ahead (on_lag SKIP) or is
// evicted (DETACH); so is one whose unreleased batches fill the ring while
// another waits. A consumer that joins late starts at the oldest batch the
// ring still holds, at most max_lag behind the leader.
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
  void AfterLease(PolicyEffects* effects) override { EnforceLag(effects); }
  void OnStarved(const ConsumerState& c, PolicyEffects* effects) override {
    RelievePinnedRing(c, effects);
  }
  void OnReleased(uint64_t seq, PolicyEffects* effects) override;
  void OnGone(const std::map<uint32_t, uint64_t>& leased,
              PolicyEffects* effects) override {
    FreeUnneeded(effects);  // the others no longer wait for it
  }

  // Applies the lag policy to consumers more than max_lag batches behind
  // the leader.
  void EnforceLag(PolicyEffects* effects);
  // `starving` has credit but its next batch cannot be decoded because
  // every slot holds an older batch: the consumer holding the oldest one
  // skips (SKIP, if it has unsent batches) or is evicted.
  void RelievePinnedRing(const ConsumerState& starving, PolicyEffects* effects);
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
