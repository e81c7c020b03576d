#include "daemon/jobs/delivery_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

// Credit beyond this is meaningless (a ring has at most kMaxSlots slots) and
// is capped, so that no client can overflow the counter.
constexpr uint32_t kMaxCredits = 1 << 16;

uint32_t AddCapped(uint32_t credits, uint32_t more) {
  return credits + std::min(more, kMaxCredits - std::min(credits, kMaxCredits));
}

}  // namespace

DeliveryPolicy::DeliveryPolicy(const Params& params)
    : params_(params), next_start_(params.start_seq) {}

void DeliveryPolicy::Started(uint64_t seq) {
  filling_.insert(seq);
  next_start_ = std::max(next_start_, seq + 1);
}

void DeliveryPolicy::Published(uint64_t seq, uint32_t slot) {
  filling_.erase(seq);
  published_.emplace(seq, PublishedBatch{slot});
  OnPublished(seq);
}

absl::StatusOr<uint64_t> DeliveryPolicy::Attach(
    std::shared_ptr<JobListener> listener, const ConsumerIdentity& who,
    uint32_t credits, PolicyEffects* effects,
    std::shared_ptr<LeaseTable> leases) {
  if (absl::Status status = CheckAttach(); !status.ok()) return status;
  if (consumers_.size() >= kMaxConsumersPerJob) {
    return absl::ResourceExhaustedError(
        absl::StrCat("job ", params_.job_id, " already has ", consumers_.size(),
                     " consumers, the most a job can have"));
  }
  ConsumerState c;
  c.listener = listener;
  c.who = who;
  c.leases = std::move(leases);
  c.id = next_consumer_id_++;
  c.credits = AddCapped(0, credits);
  c.next_seq = JoinPoint();
  const uint64_t start = c.next_seq;
  consumers_.emplace(listener.get(), std::move(c));
  OnAttached(effects);
  return start;
}

bool DeliveryPolicy::Detach(const JobListener* listener, PolicyEffects* effects,
                            const absl::Status& why) {
  auto it = consumers_.find(listener);
  if (it == consumers_.end()) return false;
  ConsumerState& c = it->second;
  if (c.active() && c.leases != nullptr) c.leases->Finish(why);
  std::vector<uint64_t> claimed;
  const std::map<uint32_t, uint64_t> unclaimed = TakeBack(c, &claimed);
  consumers_.erase(it);  // so that it no longer holds anything back
  effects->claimed += static_cast<uint32_t>(claimed.size());
  for (uint64_t seq : claimed) OnReleased(seq, effects);
  OnGone(unclaimed, effects);
  return true;
}

absl::StatusOr<UniqueFd> DeliveryPolicy::TakeLeaseFd(const std::string& token,
                                                     uid_t uid) {
  for (auto& [key, c] : consumers_) {
    if (c.leases == nullptr || c.leases->token() != token) continue;
    if (c.leases->uid() != uid) {
      return absl::PermissionDeniedError(
          "that lease table belongs to another user's consumer");
    }
    UniqueFd fd = c.leases->TakeFd();
    if (!fd) {
      return absl::FailedPreconditionError(
          "that lease table was already handed out");
    }
    return fd;
  }
  return absl::NotFoundError(
      absl::StrCat("no consumer of job ", params_.job_id,
                   " has that lease token (it has detached)"));
}

void DeliveryPolicy::AddCredit(const JobListener* listener, uint32_t credits) {
  if (ConsumerState* c = Find(listener)) {
    c->credits = AddCapped(c->credits, credits);
  }
}

void DeliveryPolicy::Report(const JobListener* listener,
                            const ConsumerReport& report) {
  if (ConsumerState* c = Find(listener)) {
    c->reported = true;
    c->report = report;
  }
}

Delivery DeliveryPolicy::Next(const JobListener* listener, bool finished,
                              absl::Time now, Lease* out, absl::Status* ended,
                              PolicyEffects* effects) {
  ConsumerState* c = Find(listener);
  if (c == nullptr) return Delivery::kNothing;
  if (!c->active()) {
    *ended = c->evicted;
    return Delivery::kEnded;
  }
  if (finished || AllSent(*c)) return Delivery::kEndOfJob;
  if (c->credits == 0) return Delivery::kNothing;
  const std::optional<uint64_t> seq = Deliverable(*c);
  if (!seq) {
    OnStarved(*c, now, effects);
    return Delivery::kNothing;
  }
  out->seq = *seq;
  out->slot = published_.at(*seq).slot;
  out->table = c->leases.get();
  OnLeased(*c, *seq);
  c->leased.emplace(out->slot, *seq);
  c->leased_at[out->slot] = now;
  --c->credits;
  ++c->delivered;
  AfterLease(now, effects);
  return Delivery::kBatch;
}

bool DeliveryPolicy::IsActive(const JobListener* listener) const {
  auto it = consumers_.find(listener);
  return it != consumers_.end() && it->second.active();
}

absl::Status DeliveryPolicy::Release(const JobListener* listener, uint32_t slot,
                                     uint64_t generation,
                                     PolicyEffects* effects) {
  ConsumerState* c = Find(listener);
  if (c == nullptr || !c->leased.contains(slot)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "release of slot ", slot, " generation ", generation,
        ": this consumer does not hold it (double release, or another "
        "consumer's slot?)"));
  }
  const uint64_t seq = c->leased.at(slot);
  c->leased.erase(slot);
  c->leased_at.erase(slot);
  ++c->released;
  OnReleased(seq, effects);
  return absl::OkStatus();
}

void DeliveryPolicy::ExpireLeases(absl::Time now, absl::Duration limit,
                                  PolicyEffects* effects) {
  for (auto& [key, c] : consumers_) {
    if (!c.active() || c.leased_at.empty()) continue;
    auto oldest = std::min_element(
        c.leased_at.begin(), c.leased_at.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    if (now - oldest->second <= limit) continue;
    const uint64_t seq = c.leased.at(oldest->first);
    const uint64_t per_epoch = params_.batches_per_epoch;
    absl::Status why = absl::DeadlineExceededError(absl::StrCat(
        Describe(c), " of job ", params_.job_id, " held batch ",
        seq / per_epoch, ":", seq % per_epoch, " (slot ", oldest->first,
        ") for ",
        absl::FormatDuration(
            absl::Trunc(now - oldest->second, absl::Milliseconds(100))),
        ", more than the lease limit of ", absl::FormatDuration(limit),
        " (--lease_timeout); its batches go to the next consumer"));
    Evict(c, std::move(why), effects);
  }
}

bool DeliveryPolicy::Starving() const {
  for (const auto& [key, c] : consumers_) {
    if (c.active() && c.credits > 0 && !Deliverable(c)) return true;
  }
  return false;
}

std::vector<std::shared_ptr<JobListener>> DeliveryPolicy::Listeners() const {
  std::vector<std::shared_ptr<JobListener>> listeners;
  for (const auto& [key, c] : consumers_) listeners.push_back(c.listener);
  return listeners;
}

void DeliveryPolicy::Free(uint64_t seq, PolicyEffects* effects) {
  auto it = published_.find(seq);
  effects->freed.push_back(it->second.slot);
  published_.erase(it);
}

void DeliveryPolicy::Evict(ConsumerState& c, absl::Status why,
                           PolicyEffects* effects) {
  // The reason goes into the lease table before any lease is revoked, so
  // that a client finding its lease revoked can say why. (Logged once, by
  // the stream it ends.)
  if (c.leases != nullptr) c.leases->Finish(why);
  c.evicted = std::move(why);
  c.credits = 0;
  std::vector<uint64_t> claimed;
  const std::map<uint32_t, uint64_t> unclaimed = TakeBack(c, &claimed);
  effects->claimed += static_cast<uint32_t>(claimed.size());
  for (uint64_t seq : claimed) OnReleased(seq, effects);
  OnGone(unclaimed, effects);
  effects->evicted.push_back(c.listener);
}

std::map<uint32_t, uint64_t> DeliveryPolicy::TakeBack(
    ConsumerState& c, std::vector<uint64_t>* claimed) {
  std::map<uint32_t, uint64_t> unclaimed;
  for (const auto& [slot, seq] : c.leased) {
    if (c.leases != nullptr && c.leases->Revoke(slot)) {
      claimed->push_back(seq);
      ++c.released;
    } else {
      unclaimed.emplace(slot, seq);
    }
  }
  c.leased.clear();
  c.leased_at.clear();
  return unclaimed;
}

ConsumerState* DeliveryPolicy::Find(const JobListener* listener) {
  auto it = consumers_.find(listener);
  return it == consumers_.end() ? nullptr : &it->second;
}

std::string DeliveryPolicy::Describe(const ConsumerState& c) {
  if (c.who.name.empty()) return absl::StrCat("consumer ", c.id);
  return absl::StrCat("consumer ", c.id, " '", c.who.name, "'");
}

}  // namespace stoker
