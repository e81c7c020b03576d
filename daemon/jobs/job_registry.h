// JobRegistry: the daemon's jobs by id. Creates a job (validated spec,
// its dataset from JobDatasets, a reserved ring), hands it to the worker
// pool, ends and forgets it on delete, and reaps what nobody will come back
// for: running jobs left without a consumer for `orphan_timeout` (a trainer
// killed with SIGKILL) and ended jobs kept for `ended_job_ttl` (so that
// their owner can still read why they ended).
//
// Whether a job fits the daemon's limits is Admission's answer
// (admission.h: per user and in all, jobs, ring bytes, dataset indexes,
// streamed windows); the registry gives it an account of its jobs and
// carries out its steps: forgetting an ended job, ending an orphan (logged
// and counted in orphans_reclaimed()), reserving the room.
//
// Thread-safety: thread-safe. Create() does file-system I/O and may take a
// while for big datasets: call it off the gRPC callback threads. Several
// Create()s may run at once; each reserves its room before the ring is made.
#ifndef STOKER_DAEMON_JOBS_JOB_REGISTRY_H_
#define STOKER_DAEMON_JOBS_JOB_REGISTRY_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/datasets/dataset_cache.h"
#include "daemon/jobs/admission.h"
#include "daemon/jobs/fetch_threads.h"
#include "daemon/jobs/job.h"
#include "daemon/jobs/job_datasets.h"
#include "daemon/jobs/worker_pool.h"
#include "daemon/os/path_policy.h"
#include "daemon/remote/object_store.h"
#include "daemon/remote/shard_cache.h"

namespace stoker {

// The limits SIGHUP may change; the daemon's settings of the same names
// (their defaults are DaemonOptions', see RegistryLimitsOf in daemon.h).
struct RegistryLimits {
  uint32_t max_jobs;
  uint32_t max_jobs_per_user;
  // Total bytes all rings may reserve, and one user's rings; 0: half of
  // /dev/shm's size, and half of the total budget.
  uint64_t shm_budget_bytes;
  uint64_t shm_budget_per_user_bytes;
  uint64_t max_dataset_samples;
  uint64_t max_index_bytes_per_user;  // 0: no limit
  // A job's bytes fields: what one value may hold at most.
  uint64_t max_field_bytes = uint64_t{64} << 10;
  absl::Duration scan_timeout;
  // Longest the fetch of one job's remote shards may take.
  absl::Duration fetch_timeout;
  // Zero: never reaped.
  absl::Duration orphan_timeout;
  absl::Duration ended_job_ttl;
  // The memory limit of stokerd's cgroup, which ring pages are charged to:
  // the budget in force is at most what it leaves (RingRoomUnder).
  std::optional<uint64_t> memory_limit;
};

struct RegistryOptions {
  std::string segment_prefix;  // see SegmentPrefix()
  // Only stokerd's own user may open a ring by name; clients get a
  // read-only descriptor through the ring socket instead.
  mode_t segment_mode = 0600;
  std::string shm_dir = "/dev/shm";  // where POSIX shared memory lives
  // Where datasets may lie; must outlive the registry (nullptr: anywhere).
  const PathPolicy* dataset_paths = nullptr;
  // Where remote shards are kept; must outlive the registry (nullptr: no
  // remote shards).
  ShardCache* shard_cache = nullptr;
  std::string remote_ca_file;  // "": the system's certificates
  // The store a job's remote shards are read from, made with its access
  // (empty: HttpStore).
  std::function<std::unique_ptr<ObjectStore>(const FetchAccess&)> object_store;
  RegistryLimits limits{};  // RegistryLimitsOf(the daemon's settings)
};

// Job ids are "j" and 12 hex digits; longer ones are refused unread.
inline constexpr size_t kMaxJobIdBytes = 64;

// Free bytes in `dir`'s file system (0 if it cannot be read), and its size.
uint64_t FreeBytes(const std::string& dir);
uint64_t TotalBytes(const std::string& dir);

class JobRegistry {
 public:
  JobRegistry(RegistryOptions options, WorkerPool* pool);

  // RESOURCE_EXHAUSTED, naming the numbers and whose jobs hold them, past
  // --max_jobs, --max_jobs_per_user, the shared-memory budgets or
  // /dev/shm's free space. The scan stops early when `cancelled` says so
  // (the caller gave up) or the registry closes. `access` (the trainer's
  // credentials for remote shards) is used while the dataset is indexed,
  // and kept nowhere.
  absl::StatusOr<std::shared_ptr<Job>> Create(
      JobConfig config, const FetchAccess& access = {},
      std::function<bool()> cancelled = {});
  // NOT_FOUND naming the id.
  absl::StatusOr<std::shared_ptr<Job>> Get(const std::string& id) const;
  std::vector<std::shared_ptr<Job>> List() const;
  absl::Status Delete(const std::string& id);
  // Reaps orphaned and expired jobs (see above); returns how many.
  int Reap(absl::Time now);
  // Orphans ended to make room for a new job, since the start.
  uint64_t orphans_reclaimed() const { return orphans_reclaimed_.load(); }
  // Ends every job with `why` and refuses new ones (daemon shutdown).
  void CloseAll(const absl::Status& why);
  uint64_t shm_bytes() const;
  // The budget in force (0 resolved).
  uint64_t shm_budget_bytes() const;
  // New limits for new jobs and the reaper (SIGHUP); running jobs are left
  // alone.
  void SetLimits(const RegistryLimits& limits);
  // segment_prefix, segment_mode, shm_dir and dataset_paths never change.
  const RegistryOptions& options() const { return options_; }
  // The dataset indexes in memory.
  DatasetCache::Usage dataset_usage() const { return datasets_.usage(); }

 private:
  using JobMap = std::map<std::string, std::shared_ptr<Job>>;
  std::string NewJobId();
  // The job over `dataset` (a streamed one with its feed).
  absl::StatusOr<std::shared_ptr<Job>> MakeJob(const std::string& id,
                                               const JobConfig& config,
                                               JobDataset dataset);
  // What config's job asks admission for (`dataset` once it is known).
  Candidate CandidateOf(const JobConfig& config,
                        const JobDataset* dataset) const;
  // Everything the jobs and reservations hold, now.
  Accounts AccountsNow() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Carries out admission's steps for `candidate` until it is admitted
  // (OK; with a `ticket`, its room reserved under it) or refused. Orphans
  // are ended only with `end_orphans`.
  absl::Status Admit(const Candidate& candidate, bool end_orphans,
                     uint64_t* ticket = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends a running job nobody consumes, saying why ("job ID " + `why`): it
  // stays listed, ended, so that a trainer coming back learns it. Called
  // without mu_ (the job's listeners run).
  void EndOrphan(Job& job, const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);
  // For the live job `for_job`, ends the longest-unattended orphan of
  // `owner` over remote shards (the shard cache room it holds goes with
  // it); false if there is none, or if for_job is itself an orphan.
  bool ReclaimOrphan(uid_t owner, const std::string& for_job)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drops an ended job from the map and the worker pool (lock order: the
  // registry's mu_, then the pool's); returns the next entry.
  JobMap::iterator Forget(JobMap::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  WorkerPool* const pool_;
  std::atomic<bool> closing_{false};
  std::atomic<uint64_t> orphans_reclaimed_{0};
  JobDatasets datasets_;

  mutable absl::Mutex mu_;
  // Its limits are written under mu_ by SetLimits, and read under mu_.
  RegistryOptions options_;
  Admission admission_ ABSL_GUARDED_BY(mu_);  // with the limits resolved
  JobMap jobs_ ABSL_GUARDED_BY(mu_);
  // Room taken by a Create() between its check and its job.
  std::map<uint64_t, Reservation> reserved_ ABSL_GUARDED_BY(mu_);
  uint64_t next_reservation_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Streamed jobs' windows of shards are fetched here. A task holds its
  // job's feed and may call ReclaimOrphan: declared last, the threads are
  // joined first when the registry goes.
  FetchThreads fetches_{4};
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_JOB_REGISTRY_H_
