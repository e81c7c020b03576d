#include "daemon/jobs/broadcast_policy.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace stoker {

uint64_t BroadcastPolicy::Lag(const ConsumerState& c) const {
  const uint64_t leader = Leader();
  return c.active() && leader > c.next_seq ? leader - c.next_seq : 0;
}

uint64_t BroadcastPolicy::JoinPoint() const {
  // The oldest batch from which the ring (or the workers) still hold every
  // batch up to the newest: a joiner must not need a batch already freed.
  auto held = [&](uint64_t seq) {
    return published_.count(seq) > 0 || filling_.count(seq) > 0;
  };
  uint64_t start = next_start_;
  while (start > params_.start_seq && held(start - 1)) --start;
  // Where the most advanced consumer stands: a joiner starting behind it
  // would be behind from its first batch on (and, in a small ring, pin it).
  return std::max(start, Leader());
}

bool BroadcastPolicy::BehindTooLong(absl::Time* since, absl::Time now) const {
  if (*since == absl::InfiniteFuture()) *since = now;
  return now - *since >= params_.lag_grace;
}

void BroadcastPolicy::Tick(absl::Time now, PolicyEffects* effects) {
  EnforceLag(now, effects);
  RelievePinnedRing(now, effects);
}

void BroadcastPolicy::OnAttached(PolicyEffects* effects) {
  // The barrier opens: everyone waiting may receive now.
  if (++attached_ever_ == params_.sharing.min_consumers) {
    effects->wake_all = true;
  }
}

std::optional<uint64_t> BroadcastPolicy::Deliverable(
    const ConsumerState& c) const {
  // The start barrier: nothing goes out before min_consumers attached, so
  // that all of them start together at the first batch.
  if (!barrier_open() || published_.count(c.next_seq) == 0) {
    return std::nullopt;
  }
  return c.next_seq;
}

void BroadcastPolicy::OnReleased(uint64_t seq, PolicyEffects* effects) {
  ++published_.at(seq).releases;
  FreeUnneeded(effects);
}

void BroadcastPolicy::EnforceLag(absl::Time now, PolicyEffects* effects) {
  const uint64_t leader = Leader();
  const uint32_t max_lag = params_.sharing.max_lag;
  for (auto& [key, c] : consumers_) {
    if (!c.active() || c.next_seq + max_lag >= leader) {
      c.lagging_since = absl::InfiniteFuture();
      continue;
    }
    if (!BehindTooLong(&c.lagging_since, now)) continue;
    c.lagging_since = absl::InfiniteFuture();
    if (params_.sharing.on_lag == LagPolicy::kSkip) {
      c.skipped += leader - max_lag - c.next_seq;
      c.next_seq = leader - max_lag;
    } else {
      Evict(c, LagError(c, leader - c.next_seq, ""), effects);
    }
  }
  FreeUnneeded(effects);
}

void BroadcastPolicy::RelievePinnedRing(absl::Time now,
                                        PolicyEffects* effects) {
  // Pinned: no slot to fill, so a batch someone waits for cannot be decoded
  // until the consumer holding the oldest one lets go of it.
  ConsumerState* blocker = nullptr;
  const ConsumerState* waiter = nullptr;
  if (filling_.empty() && published_.size() >= params_.slots) {
    for (auto& [key, c] : consumers_) {
      if (c.active() &&
          (blocker == nullptr || OldestHeld(c) < OldestHeld(*blocker))) {
        blocker = &c;
      }
    }
    for (const auto& [key, c] : consumers_) {
      // One that waits, and not for itself.
      if (blocker != nullptr && c.active() && c.credits > 0 &&
          !Deliverable(c) && OldestHeld(c) > OldestHeld(*blocker)) {
        waiter = &c;
        break;
      }
    }
  }
  if (waiter == nullptr) blocker = nullptr;
  for (auto& [key, c] : consumers_) {
    if (&c != blocker) c.pinning_since = absl::InfiniteFuture();
  }
  if (blocker == nullptr || !BehindTooLong(&blocker->pinning_since, now)) {
    return;
  }
  blocker->pinning_since = absl::InfiniteFuture();
  if (params_.sharing.on_lag == LagPolicy::kSkip &&
      blocker->next_seq < waiter->next_seq) {
    blocker->skipped += waiter->next_seq - blocker->next_seq;
    blocker->next_seq = waiter->next_seq;
  } else {
    Evict(*blocker,
          LagError(*blocker, Leader() - OldestHeld(*blocker),
                   ": the ring is full of batches it has not released"),
          effects);
  }
  FreeUnneeded(effects);
}

void BroadcastPolicy::FreeUnneeded(PolicyEffects* effects) {
  // Until min_consumers have attached, every batch waits for them.
  if (!barrier_open()) return;
  bool any_active = false;
  for (const auto& [key, c] : consumers_) any_active = any_active || c.active();
  std::vector<uint64_t> done;
  for (const auto& [seq, p] : published_) {
    // With nobody attached, what nobody has seen waits for the next one.
    if (!any_active && p.releases == 0) continue;
    bool needed = false;
    for (const auto& [key, c] : consumers_) {
      if (!c.active()) continue;
      needed = needed || c.next_seq <= seq || c.leased.count(p.slot) > 0;
    }
    if (!needed) done.push_back(seq);
  }
  for (uint64_t seq : done) Free(seq, effects);
}

absl::Status BroadcastPolicy::LagError(const ConsumerState& c, uint64_t lag,
                                       absl::string_view why) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      Describe(c), " of broadcast job ", params_.job_id, " fell ", lag,
      " batches behind the most advanced consumer (max_lag ",
      params_.sharing.max_lag, ", ", c.leased.size(),
      " batches held unreleased)", why,
      "; detached so that the others keep going (on_lag=",
      params_.sharing.on_lag == LagPolicy::kSkip ? "SKIP" : "DETACH", ")"));
}

uint64_t BroadcastPolicy::Leader() const {
  uint64_t leader = 0;
  for (const auto& [key, c] : consumers_) {
    if (c.active()) leader = std::max(leader, c.next_seq);
  }
  return leader;
}

uint64_t BroadcastPolicy::OldestHeld(const ConsumerState& c) {
  uint64_t oldest = c.next_seq;
  for (const auto& [slot, seq] : c.leased) oldest = std::min(oldest, seq);
  return oldest;
}

}  // namespace stoker
