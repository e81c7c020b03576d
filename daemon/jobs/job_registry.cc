#include "daemon/jobs/job_registry.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/spec/job_spec.h"

namespace stoker {

JobRegistry::JobRegistry(RegistryOptions options, WorkerPool* pool)
    : pool_(pool), options_(std::move(options)) {}

std::string JobRegistry::NewJobId() {
  // Random, so an id held by a client across a daemon restart never names
  // somebody else's new job.
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("j%012x", rng() & 0xffffffffffffull);
}

uint64_t FreeBytes(const std::string& dir) {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) return 0;
  return uint64_t{vfs.f_bavail} * vfs.f_frsize;
}

uint64_t JobRegistry::shm_budget_bytes() const {
  absl::MutexLock lock(&mu_);
  return options_.shm_budget_bytes;
}

void JobRegistry::SetLimits(uint32_t max_jobs, uint32_t max_jobs_per_client,
                            uint64_t shm_budget_bytes) {
  absl::MutexLock lock(&mu_);
  options_.max_jobs = max_jobs;
  options_.max_jobs_per_client = max_jobs_per_client;
  options_.shm_budget_bytes = shm_budget_bytes;
}

absl::Status JobRegistry::CheckLimits(const JobConfig& config) const {
  uint32_t live = 0;
  uint32_t owned = 0;
  uint64_t reserved = 0;
  for (const auto& [id, job] : jobs_) {
    if (job->state() != JobState::kRunning) continue;
    ++live;
    owned += job->config().owner == config.owner ? 1 : 0;
    reserved += job->geometry().segment_bytes;
  }
  if (live >= options_.max_jobs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "stokerd already runs ", live, " jobs, its limit (--max_jobs=",
        options_.max_jobs, "); delete finished jobs first"));
  }
  if (owned >= options_.max_jobs_per_client) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "client ", config.owner, " already runs ", owned,
        " jobs, the limit per client (--max_jobs_per_client=",
        options_.max_jobs_per_client, "); delete finished jobs first"));
  }
  const uint64_t bytes = RingGeometryFor(config).segment_bytes;
  const uint64_t budget = options_.shm_budget_bytes;
  if (budget > 0 && reserved + bytes > budget) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the job's ring needs ", bytes, " bytes of shared memory (",
        config.slots, " slots x ", bytes / config.slots, "); ", live,
        " running jobs hold ", reserved, " of the daemon's budget of ", budget,
        " bytes (--shm_budget), leaving ", budget - std::min(budget, reserved),
        ": use fewer slots or a smaller batch, or delete a job"));
  }
  const uint64_t free_bytes = FreeBytes(options_.shm_dir);
  if (bytes > free_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the job's ring needs ", bytes, " bytes of shared memory but ",
        options_.shm_dir, " has only ", free_bytes,
        " bytes free: use fewer slots or a smaller batch, or enlarge ",
        options_.shm_dir));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Create(JobConfig config) {
  if (options_.dataset_paths != nullptr) {
    STOKER_ASSIGN_OR_RETURN(
        config.dataset_path,
        options_.dataset_paths->Resolve(config.dataset_path));
  }
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::UnavailableError("stokerd is shutting down");
    // CreateJob calls run one at a time (the service's control thread), so
    // nothing can take the room between this check and the ring's creation.
    STOKER_RETURN_IF_ERROR(CheckLimits(config));
  }
  STOKER_ASSIGN_OR_RETURN(Dataset dataset,
                          ScanImageFolder(config.dataset_path));
  const std::string id = NewJobId();
  STOKER_ASSIGN_OR_RETURN(
      std::shared_ptr<Job> job,
      Job::Create(id, config, std::move(dataset), options_.segment_prefix + id,
                  options_.segment_mode, [pool = pool_] { pool->Notify(); }));
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::UnavailableError("stokerd is shutting down");
    jobs_.emplace(id, job);
  }
  pool_->Add(job);
  spdlog::info(
      "job {}: created '{}' for client {} on {} ({} samples, {} "
      "classes, {} slots of {} bytes, weight {})",
      id, config.name, config.owner, config.dataset_path,
      job->dataset().samples.size(), job->dataset().class_names.size(),
      config.slots, job->geometry().slot.slot_bytes, config.weight);
  return job;
}

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Get(
    const std::string& id) const {
  if (id.size() > kMaxJobIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("job_id is ", id.size(), " bytes; job ids are at most ",
                     kMaxJobIdBytes));
  }
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("job_id '", id, "' not found"));
  }
  return it->second;
}

std::vector<std::shared_ptr<Job>> JobRegistry::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<Job>> jobs;
  for (const auto& [id, job] : jobs_) jobs.push_back(job);
  return jobs;
}

absl::Status JobRegistry::Delete(const std::string& id) {
  std::shared_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) {
      return absl::NotFoundError(absl::StrCat(
          "job_id '", id.substr(0, kMaxJobIdBytes), "' not found"));
    }
    job = std::move(it->second);
    jobs_.erase(it);
  }
  pool_->Remove(job.get());
  job->End(absl::CancelledError(absl::StrCat("job ", id, " was deleted")));
  spdlog::info("job {}: deleted", id);
  return absl::OkStatus();
}

void JobRegistry::CloseAll(const absl::Status& why) {
  std::map<std::string, std::shared_ptr<Job>> jobs;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    jobs.swap(jobs_);
  }
  for (auto& [id, job] : jobs) {
    pool_->Remove(job.get());
    job->End(why);
  }
}

uint64_t JobRegistry::shm_bytes() const {
  uint64_t total = 0;
  for (const auto& job : List()) {
    if (job->state() == JobState::kRunning) {
      total += job->geometry().segment_bytes;
    }
  }
  return total;
}

}  // namespace stoker
