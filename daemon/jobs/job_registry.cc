#include "daemon/jobs/job_registry.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/os/byte_size.h"
#include "daemon/os/cgroup_memory.h"
#include "daemon/spec/job_spec.h"

namespace stoker {
namespace {

// "uid 1000: 3 jobs, 1.5G; uid 0: 1 job, 200M" for the largest holders.
std::string Holders(const std::map<uid_t, JobRegistry::Holding>& by_user) {
  std::vector<std::pair<uid_t, JobRegistry::Holding>> sorted(by_user.begin(),
                                                             by_user.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second.bytes > b.second.bytes;
  });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    absl::StrAppend(&text, i ? "; " : "", "uid ", sorted[i].first, ": ",
                    sorted[i].second.jobs,
                    sorted[i].second.jobs == 1 ? " job, " : " jobs, ",
                    FormatByteSize(sorted[i].second.bytes));
  }
  return text;
}

}  // namespace

JobRegistry::JobRegistry(RegistryOptions options, WorkerPool* pool)
    : pool_(pool), options_(std::move(options)) {
  SetLimits(options_.limits);
}

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

uint64_t TotalBytes(const std::string& dir) {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) return 0;
  return uint64_t{vfs.f_blocks} * vfs.f_frsize;
}

uint64_t JobRegistry::shm_budget_bytes() const {
  absl::MutexLock lock(&mu_);
  return budget_;
}

void JobRegistry::SetLimits(const RegistryLimits& limits) {
  absl::MutexLock lock(&mu_);
  options_.limits = limits;
  budget_ = limits.shm_budget_bytes > 0 ? limits.shm_budget_bytes
                                        : TotalBytes(options_.shm_dir) / 2;
  capped_by_.reset();
  if (limits.memory_limit) {
    const uint64_t room = RingRoomUnder(*limits.memory_limit);
    if (room < budget_) {
      budget_ = room;
      capped_by_ = limits.memory_limit;
    }
  }
  budget_per_user_ = limits.shm_budget_per_user_bytes > 0
                         ? std::min(limits.shm_budget_per_user_bytes, budget_)
                         : budget_ / 2;
}

JobRegistry::JobMap::iterator JobRegistry::Forget(JobMap::iterator it) {
  // A job that ended on its own (finished, or failed by a worker) is still
  // one of the pool's entries: the index it holds (~90 bytes a sample) is
  // freed only once the pool lets go too.
  pool_->Remove(it->second.get());
  return jobs_.erase(it);
}

bool JobRegistry::ReapOldestEnded(std::optional<uid_t> owner) {
  auto oldest = jobs_.end();
  absl::Time oldest_end = absl::InfiniteFuture();
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if (owner && it->second->config().owner_uid != *owner) continue;
    const absl::Time ended = it->second->ended_at();
    if (ended < oldest_end) {
      oldest = it;
      oldest_end = ended;
    }
  }
  if (oldest == jobs_.end()) return false;
  spdlog::info("job {}: forgotten (ended, and its room was needed)",
               oldest->first);
  Forget(oldest);
  return true;
}

uint32_t JobRegistry::CountHoldings(std::map<uid_t, Holding>* by_user) const {
  by_user->clear();
  uint32_t jobs = static_cast<uint32_t>(reserved_.size());
  for (const auto& [id, job] : jobs_) {
    Holding& h = (*by_user)[job->config().owner_uid];
    ++h.jobs;
    ++jobs;
    if (job->state() == JobState::kRunning) {
      h.bytes += job->geometry().segment_bytes;
    }
  }
  for (const auto& [ticket, r] : reserved_) {
    ++(*by_user)[r.owner].jobs;
    (*by_user)[r.owner].bytes += r.bytes;
  }
  return jobs;
}

absl::Status JobRegistry::CheckLimits(const JobConfig& config, bool* per_user) {
  bool own = false;
  if (per_user == nullptr) per_user = &own;
  *per_user = false;
  const RegistryLimits& l = options_.limits;
  const uid_t uid = config.owner_uid;
  std::map<uid_t, Holding> by_user;
  uint32_t jobs = CountHoldings(&by_user);
  while (jobs >= l.max_jobs && ReapOldestEnded(std::nullopt)) {
    jobs = CountHoldings(&by_user);
  }
  if (jobs >= l.max_jobs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "stokerd already holds ", jobs,
        " jobs, its limit (--max_jobs=", l.max_jobs, "), all running (",
        Holders(by_user), "): delete jobs that are no longer needed"));
  }
  while (by_user[uid].jobs >= l.max_jobs_per_user && ReapOldestEnded(uid)) {
    CountHoldings(&by_user);
  }
  if (by_user[uid].jobs >= l.max_jobs_per_user) {
    *per_user = true;
    return absl::ResourceExhaustedError(absl::StrCat(
        "uid ", uid, " already runs ", by_user[uid].jobs,
        " jobs, the limit per user (--max_jobs_per_user=", l.max_jobs_per_user,
        "): delete jobs it no longer needs"));
  }
  return CheckMemory(config, by_user, per_user);
}

absl::Status JobRegistry::CheckMemory(const JobConfig& config,
                                      std::map<uid_t, Holding>& by_user,
                                      bool* per_user) const {
  const uid_t uid = config.owner_uid;
  const uint64_t bytes = RingGeometryFor(config).segment_bytes;
  uint64_t reserved = 0;
  for (const auto& [owner, h] : by_user) reserved += h.bytes;
  const std::string ring = absl::StrCat(
      "the job's ring needs ", FormatByteSize(bytes), " of shared memory (",
      config.slots, " slots of ", FormatByteSize(bytes / config.slots), "); ");
  // The most direct cause first: /dev/shm itself cannot hold it.
  const uint64_t free_bytes = FreeBytes(options_.shm_dir);
  if (bytes > free_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        ring, options_.shm_dir, " has only ", FormatByteSize(free_bytes),
        " free, and stokerd's own rings hold ", FormatByteSize(reserved),
        " of it (the rest is other programs' shared memory): free some or "
        "enlarge ",
        options_.shm_dir));
  }
  if (reserved + bytes > budget_) {
    const std::string why =
        capped_by_
            ? absl::StrCat(
                  "--shm_budget, lowered to what the memory "
                  "limit of stokerd's cgroup, ",
                  FormatByteSize(*capped_by_), ", leaves after a reserve")
            : "--shm_budget";
    return absl::ResourceExhaustedError(
        absl::StrCat(ring, "running jobs hold ", FormatByteSize(reserved),
                     " of stokerd's budget of ", FormatByteSize(budget_), " (",
                     why, ") (", Holders(by_user),
                     "): use fewer slots or a smaller batch, or delete a job"));
  }
  if (by_user[uid].bytes + bytes > budget_per_user_) {
    *per_user = true;
    return absl::ResourceExhaustedError(absl::StrCat(
        ring, "uid ", uid, "'s running jobs hold ",
        FormatByteSize(by_user[uid].bytes), " of the ",
        FormatByteSize(budget_per_user_),
        " one user may hold (--shm_budget_per_user): use fewer slots or a "
        "smaller batch, or delete one of its jobs"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::Create(
    JobConfig config, const FetchAccess& access,
    std::function<bool()> cancelled) {
  absl::Duration fetch_timeout;
  ScanLimits scan{.policy = options_.dataset_paths,
                  .cancelled = [this, &cancelled] {
                    return closing_.load() || (cancelled && cancelled());
                  }};
  {
    // Refuse early, before a long scan; checked again before the ring.
    STOKER_RETURN_IF_ERROR(MakeRoom(config));
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::UnavailableError("stokerd is shutting down");
    STOKER_RETURN_IF_ERROR(
        BoundFields(options_.limits.max_field_bytes, &config));
    scan.max_samples = options_.limits.max_dataset_samples;
    scan.max_entries = 2 * scan.max_samples + (uint64_t{1} << 20);
    scan.timeout = options_.limits.scan_timeout;
    fetch_timeout = options_.limits.fetch_timeout;
  }
  absl::StatusOr<JobDataset> dataset =
      Index(&config, access, scan, fetch_timeout);
  if (!dataset.ok()) return dataset.status();
  STOKER_RETURN_IF_ERROR(dataset->index != nullptr
                             ? SizeFields(*dataset->index, &config)
                             : SizeFieldsAtMost(&config));
  // Bytes fields' rows are known now: room for the ring they make.
  if (config.named_fields) STOKER_RETURN_IF_ERROR(MakeRoom(config));
  const std::string id = NewJobId();
  uint64_t ticket = 0;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::UnavailableError("stokerd is shutting down");
    STOKER_RETURN_IF_ERROR(CheckLimits(config));
    STOKER_RETURN_IF_ERROR(CheckIndexMemory(config.owner_uid, *dataset));
    STOKER_RETURN_IF_ERROR(CheckStreamRoom(config, *dataset));
    ticket = next_reservation_++;
    reserved_[ticket] = {config.owner_uid,
                         RingGeometryFor(config).segment_bytes};
  }
  auto job = MakeJob(id, config, *std::move(dataset));
  {
    absl::MutexLock lock(&mu_);
    reserved_.erase(ticket);
    if (!job.ok()) return job.status();
    if (closed_) {
      (*job)->End(absl::UnavailableError("stokerd is shutting down"));
      return absl::UnavailableError("stokerd is shutting down");
    }
    jobs_.emplace(id, *job);
  }
  pool_->Add(*job);
  spdlog::info(
      "job {}: created '{}' for uid {} (client {}) on {} ({} samples, {} "
      "classes, {} slots of {} bytes, weight {})",
      id, config.name, config.owner_uid, config.owner, DatasetName(config),
      (*job)->dataset().samples, (*job)->dataset().class_names.size(),
      config.slots, (*job)->geometry().slot.slot_bytes, config.weight);
  return *std::move(job);
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

int JobRegistry::Reap(absl::Time now) {
  std::vector<std::shared_ptr<Job>> orphans;
  int forgotten = 0;
  absl::Duration orphan_timeout;
  {
    absl::MutexLock lock(&mu_);
    const RegistryLimits& l = options_.limits;
    orphan_timeout = l.orphan_timeout;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      const std::shared_ptr<Job>& job = it->second;
      if (job->state() != JobState::kRunning) {
        if (l.ended_job_ttl > absl::ZeroDuration() &&
            now - job->ended_at() >= l.ended_job_ttl) {
          spdlog::info("job {}: forgotten ({} after it ended)", it->first,
                       absl::FormatDuration(l.ended_job_ttl));
          it = Forget(it);
          ++forgotten;
          continue;
        }
      } else if (l.orphan_timeout > absl::ZeroDuration() &&
                 job->Unattended(now) >= l.orphan_timeout) {
        orphans.push_back(job);
      }
      ++it;
    }
  }
  for (const auto& job : orphans) {
    EndOrphan(*job, absl::StrCat("had no consumer for ",
                                 absl::FormatDuration(orphan_timeout),
                                 " and was ended, its ring freed "
                                 "(--orphan_timeout)"));
  }
  return forgotten + static_cast<int>(orphans.size());
}

void JobRegistry::CloseAll(const absl::Status& why) {
  closing_ = true;
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
