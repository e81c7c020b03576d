// JobRegistry: orphans give way to live trainers (see job_registry.h).
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "daemon/jobs/job_registry.h"

namespace stoker {

std::shared_ptr<Job> JobRegistry::PickOrphan(uid_t owner, bool any_user) {
  const absl::Time now = absl::Now();
  std::shared_ptr<Job> oldest;
  absl::Duration longest = -absl::InfiniteDuration();
  for (const auto& [id, job] : jobs_) {
    const JobConfig& config = job->config();
    if (!any_user && config.owner_uid != owner) continue;
    if (job->state() != JobState::kRunning || job->Attended() ||
        !ProcessGone(config.owner_process)) {
      continue;
    }
    // The caller's own orphans first, then the longest unattended.
    const absl::Duration alone =
        job->Unattended(now) + (config.owner_uid == owner
                                    ? absl::Hours(24 * 365)
                                    : absl::ZeroDuration());
    if (alone > longest) {
      longest = alone;
      oldest = job;
    }
  }
  return oldest;
}

absl::Status JobRegistry::MakeRoom(const JobConfig& config) {
  // Each round ends one orphan; the bound only stops a pathological loop.
  for (int round = 0;; ++round) {
    std::shared_ptr<Job> orphan;
    absl::Status room;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::UnavailableError("stokerd is shutting down");
      bool per_user = false;
      room = CheckLimits(config, &per_user);
      if (room.ok() || !absl::IsResourceExhausted(room) || round >= 64) {
        return room;
      }
      orphan = PickOrphan(config.owner_uid, /*any_user=*/!per_user);
      if (orphan == nullptr) return room;
    }
    // As Reap ends orphans: outside mu_, and the job stays listed (ended)
    // so that a trainer coming back learns why.
    pool_->Remove(orphan.get());
    orphan->End(absl::FailedPreconditionError(absl::StrCat(
        "job ", orphan->id(),
        " was ended to make room for a new job at stokerd's limits: the "
        "process that created it was gone and no consumer was attached")));
    orphans_reclaimed_.fetch_add(1);
    spdlog::info(
        "job {} of uid {}: ended to make room for a new job of uid {} (its "
        "creator is gone, no consumer attached)",
        orphan->id(), orphan->config().owner_uid, config.owner_uid);
  }
}

}  // namespace stoker
