// JobRegistry: orphans give way to live trainers (see job_registry.h).
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "daemon/datasets/dataset_source.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/jobs/job_registry.h"
#include "daemon/os/process_identity.h"

namespace stoker {

std::shared_ptr<Job> JobRegistry::PickOrphan(uid_t owner, bool any_user,
                                             bool remote_only) {
  const absl::Time now = absl::Now();
  std::shared_ptr<Job> oldest;
  std::pair<bool, absl::Duration> best;
  for (const auto& [id, job] : jobs_) {
    const JobConfig& config = job->config();
    if (!any_user && config.owner_uid != owner) continue;
    if (remote_only && !NamesRemoteShards(DatasetRefOf(config))) continue;
    if (job->state() != JobState::kRunning || job->Attended() ||
        !ProcessGone(config.owner_process)) {
      continue;
    }
    // The caller's own orphans first, then the longest unattended.
    const std::pair<bool, absl::Duration> rank = {config.owner_uid == owner,
                                                  job->Unattended(now)};
    if (oldest == nullptr || rank > best) {
      best = rank;
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
    EndOrphan(*orphan,
              "was ended to make room for a new job at stokerd's limits: the "
              "process that created it was gone and no consumer was attached");
    orphans_reclaimed_.fetch_add(1);
  }
}

bool JobRegistry::ReclaimOrphan(uid_t owner, const std::string& for_job) {
  std::shared_ptr<Job> orphan;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    // Only for a live job: an orphan does not end its siblings (or itself).
    const auto asking = jobs_.find(for_job);
    if (asking == jobs_.end() ||
        (!asking->second->Attended() &&
         ProcessGone(asking->second->config().owner_process))) {
      return false;
    }
    orphan = PickOrphan(owner, /*any_user=*/false, /*remote_only=*/true);
  }
  if (orphan == nullptr) return false;
  EndOrphan(*orphan,
            "was ended to make room in the shard cache for a streamed job of "
            "its user: the process that created it was gone and no consumer "
            "was attached");
  orphans_reclaimed_.fetch_add(1);
  return true;
}

void JobRegistry::EndOrphan(Job& job, const std::string& why) {
  pool_->Remove(&job);
  job.End(
      absl::FailedPreconditionError(absl::StrCat("job ", job.id(), " ", why)));
  spdlog::info("job {} of uid {}: {}", job.id(), job.config().owner_uid, why);
}

}  // namespace stoker
