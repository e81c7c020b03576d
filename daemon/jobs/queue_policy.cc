#include "daemon/jobs/queue_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace stoker {

QueuePolicy::QueuePolicy(const Params& params)
    : DeliveryPolicy(params), next_send_(params.start_seq) {}

absl::Status QueuePolicy::CheckAttach() const {
  if (exclusive() && !consumers_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", params_.job_id,
        " already has a consumer attached (its sharing mode is exclusive; "
        "create it with broadcast or partition to share it)"));
  }
  return absl::OkStatus();
}

uint64_t QueuePolicy::JoinPoint() const {
  // The first batch nobody has released: requeued or leased ones come
  // before everything not yet sent.
  uint64_t first = next_send_;
  if (!ready_.empty()) first = std::min(first, *ready_.begin());
  for (const auto& [key, other] : consumers_) {
    for (const auto& [slot, seq] : other.leased) first = std::min(first, seq);
  }
  return first;
}

std::optional<uint64_t> QueuePolicy::Deliverable(const ConsumerState& c) const {
  if (ready_.empty() || *ready_.begin() > next_send_) return std::nullopt;
  return *ready_.begin();
}

bool QueuePolicy::AllSent(const ConsumerState& c) const {
  // A partition consumer learns of the end only when the job finishes:
  // until the last release, a batch may come back to it.
  return exclusive() && next_send_ == params_.total_batches && ready_.empty();
}

void QueuePolicy::OnLeased(ConsumerState& c, uint64_t seq) {
  ready_.erase(seq);
  if (seq == next_send_) ++next_send_;
}

void QueuePolicy::OnReleased(uint64_t seq, PolicyEffects* effects) {
  Free(seq, effects);
}

void QueuePolicy::OnGone(const std::map<uint32_t, uint64_t>& leased,
                         PolicyEffects* effects) {
  // What it held goes back, in order, to the next consumer.
  for (const auto& [slot, seq] : leased) ready_.insert(seq);
  if (!leased.empty()) effects->wake_all = true;
}

}  // namespace stoker
