#include "daemon/jobs/job_registry.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/datasets/dataset_source.h"
#include "daemon/jobs/dataset_sources.h"
#include "daemon/os/cgroup_memory.h"
#include "daemon/os/process_identity.h"
#include "daemon/spec/job_spec.h"

namespace stoker {
JobRegistry::JobRegistry(RegistryOptions options, WorkerPool* pool)
    : pool_(pool),
      datasets_({.shard_cache = options.shard_cache,
                 .remote_ca_file = options.remote_ca_file,
                 .object_store = options.object_store}),
      options_(std::move(options)) {
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
  return admission_.limits().budget;
}

void JobRegistry::SetLimits(const RegistryLimits& limits) {
  absl::MutexLock lock(&mu_);
  options_.limits = limits;
  AdmissionLimits resolved{
      .max_jobs = limits.max_jobs,
      .max_jobs_per_user = limits.max_jobs_per_user,
      .budget = limits.shm_budget_bytes > 0 ? limits.shm_budget_bytes
                                            : TotalBytes(options_.shm_dir) / 2,
      .max_index_bytes_per_user = limits.max_index_bytes_per_user};
  if (limits.memory_limit) {
    const uint64_t room = RingRoomUnder(*limits.memory_limit);
    if (room < resolved.budget) {
      resolved.budget = room;
      resolved.capped_by = limits.memory_limit;
    }
  }
  resolved.budget_per_user =
      limits.shm_budget_per_user_bytes > 0
          ? std::min(limits.shm_budget_per_user_bytes, resolved.budget)
          : resolved.budget / 2;
  admission_ = Admission(resolved);
}

JobRegistry::JobMap::iterator JobRegistry::Forget(JobMap::iterator it) {
  // A job that ended on its own (finished, or failed by a worker) is still
  // one of the pool's entries: the index it holds (~90 bytes a sample) is
  // freed only once the pool lets go too.
  pool_->Remove(it->second.get());
  return jobs_.erase(it);
}

Candidate JobRegistry::CandidateOf(const JobConfig& config,
                                   const JobDataset* dataset) const {
  Candidate candidate{.owner = config.owner_uid,
                      .ring_bytes = RingGeometryFor(config).segment_bytes,
                      .slots = config.slots};
  if (dataset != nullptr) {
    candidate.dataset_known = true;
    candidate.index = dataset->key();
    candidate.index_bytes = dataset->memory_bytes();
    if (dataset->streamed != nullptr && options_.shard_cache != nullptr) {
      candidate.streamed = true;
      candidate.stream_room = StreamRoom(config, dataset->streamed->table());
    }
  }
  return candidate;
}

Accounts JobRegistry::AccountsNow() const {
  Accounts accounts{.shm_dir = options_.shm_dir,
                    .shm_free = FreeBytes(options_.shm_dir)};
  if (options_.shard_cache != nullptr) {
    accounts.cache_per_user = options_.shard_cache->max_bytes_for_user();
  }
  const absl::Time now = absl::Now();
  for (const auto& [id, job] : jobs_) {
    const JobConfig& config = job->config();
    JobAccount& account = accounts.jobs.emplace_back();
    account.id = id;
    account.owner = config.owner_uid;
    account.running = job->state() == JobState::kRunning;
    account.ring_bytes = job->geometry().segment_bytes;
    account.ended_at = job->ended_at();
    account.orphan = account.running && !job->Attended() &&
                     ProcessGone(config.owner_process);
    if (account.orphan) {
      account.unattended = job->Unattended(now);
      account.remote = NamesRemoteShards(DatasetRefOf(config));
    }
    if (const DatasetIndex* index = job->held_index()) {
      account.index = index;
      account.index_bytes = index->MemoryBytes();
    } else if (const StreamFeed* stream = job->stream()) {
      account.index = stream;
      account.index_bytes = job->dataset().index_bytes;
      account.streamed = true;
      account.stream_room = stream->room();
    }
  }
  for (const auto& [ticket, reservation] : reserved_) {
    accounts.reserved.push_back(reservation);
  }
  return accounts;
}

absl::Status JobRegistry::Admit(const Candidate& candidate, bool end_orphans,
                                uint64_t* ticket) {
  // Each orphan ended is a round; the bound only stops a pathological loop.
  for (int ended = 0;; ++ended) {
    std::shared_ptr<Job> orphan;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::UnavailableError("stokerd is shutting down");
      AdmissionStep step =
          admission_.Next(AccountsNow(), candidate, end_orphans && ended < 64);
      // Forgetting an ended job runs no listener: done here, under mu_.
      while (step.kind == AdmissionStep::Kind::kForgetEnded) {
        spdlog::info("job {}: forgotten (ended, and its room was needed)",
                     step.job);
        Forget(jobs_.find(step.job));
        step = admission_.Next(AccountsNow(), candidate,
                               end_orphans && ended < 64);
      }
      if (step.kind == AdmissionStep::Kind::kRefuse) return step.refusal;
      if (step.kind == AdmissionStep::Kind::kAdmit) {
        if (ticket != nullptr) {
          *ticket = next_reservation_++;
          reserved_[*ticket] = {.owner = candidate.owner,
                                .ring_bytes = candidate.ring_bytes,
                                .stream_room = candidate.stream_room};
        }
        return absl::OkStatus();
      }
      orphan = jobs_.at(step.job);
    }
    EndOrphan(*orphan,
              "was ended to make room for a new job at stokerd's limits: the "
              "process that created it was gone and no consumer was attached");
    orphans_reclaimed_.fetch_add(1);
  }
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
    STOKER_RETURN_IF_ERROR(
        Admit(CandidateOf(config, nullptr), /*end_orphans=*/true));
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
      datasets_.Make(&config, access, scan, fetch_timeout);
  if (!dataset.ok()) return dataset.status();
  STOKER_RETURN_IF_ERROR(dataset->index != nullptr
                             ? SizeFields(*dataset->index, &config)
                             : SizeFieldsAtMost(&config));
  // Bytes fields' rows are known now: room for the ring they make.
  if (config.named_fields) {
    STOKER_RETURN_IF_ERROR(
        Admit(CandidateOf(config, nullptr), /*end_orphans=*/true));
  }
  const std::string id = NewJobId();
  uint64_t ticket = 0;
  STOKER_RETURN_IF_ERROR(
      Admit(CandidateOf(config, &*dataset), /*end_orphans=*/false, &ticket));
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

absl::StatusOr<std::shared_ptr<Job>> JobRegistry::MakeJob(
    const std::string& id, const JobConfig& config, JobDataset dataset) {
  std::function<void()> on_work = [pool = pool_] { pool->Notify(); };
  std::shared_ptr<StreamFeed> feed;
  if (dataset.streamed != nullptr) {
    feed = std::make_shared<StreamFeed>(
        std::move(dataset.streamed), config, &fetches_, on_work,
        [this, uid = config.owner_uid, id] { return ReclaimOrphan(uid, id); });
  }
  return Job::Create(id, config, std::move(dataset.index),
                     options_.segment_prefix + id, options_.segment_mode,
                     std::move(on_work), std::move(feed));
}

bool JobRegistry::ReclaimOrphan(uid_t owner, const std::string& for_job) {
  std::shared_ptr<Job> orphan;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return false;
    const Accounts accounts = AccountsNow();
    // Only for a live job: an orphan does not end its siblings (or itself).
    const auto asking =
        std::find_if(accounts.jobs.begin(), accounts.jobs.end(),
                     [&](const JobAccount& job) { return job.id == for_job; });
    if (asking == accounts.jobs.end() || !asking->running || asking->orphan) {
      return false;
    }
    const std::optional<std::string> id = Admission::PickOrphan(
        accounts, owner, /*any_user=*/false, /*remote_only=*/true);
    if (!id) return false;
    orphan = jobs_.at(*id);
  }
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
