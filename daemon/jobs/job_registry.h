// JobRegistry: the daemon's jobs by id. Creates a job (validated spec,
// scanned dataset, reserved ring), hands it to the worker pool, ends and
// forgets it on delete, and reaps what nobody will come back for: running
// jobs left without a consumer for `orphan_timeout` (a trainer killed with
// SIGKILL) and ended jobs kept for `ended_job_ttl` (so that their owner can
// still read why they ended).
//
// Limits are per user (the uid the kernel reports for the caller), so that
// one user cannot take every job, or all the shared memory, from the others.
// Ended jobs count towards max_jobs and max_jobs_per_user until they are
// reaped; a CreateJob that would pass a limit reaps the oldest ended job
// first (of the caller, for the per-user limit). Orphans (running jobs with
// no consumer whose creating process is gone: a trainer killed with
// SIGKILL) are kept for orphan_timeout so that their trainer can resume,
// but not against a live trainer: a CreateJob that would pass a limit ends
// the longest-unattended orphan first (the caller's, then, for the limits
// in all, anyone's), logs it and counts it (orphans_reclaimed()).
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
#include "daemon/datasets/remote_shards.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/datasets/streamed_shards.h"
#include "daemon/jobs/fetch_threads.h"
#include "daemon/jobs/job.h"
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

  // What one user holds: jobs (running or ended, plus reservations) and
  // ring bytes (running jobs and reservations).
  struct Holding {
    uint32_t jobs = 0;
    uint64_t bytes = 0;
  };

 private:
  using JobMap = std::map<std::string, std::shared_ptr<Job>>;
  // Room taken by a Create() between its check and its ring.
  struct Reservation {
    uid_t owner;
    uint64_t bytes;
  };
  std::string NewJobId();
  // A job's dataset: its index, or a streamed job's shards.
  struct JobDataset {
    std::shared_ptr<const DatasetIndex> index;
    std::shared_ptr<const StreamedShards> streamed;
  };
  // The dataset of config's job, from its source (resolving
  // config->dataset_path): local data as the job's owner, shared with the
  // jobs over the same data while it holds; remote shards through the
  // shard cache, with a store holding the job's `access`, whole or
  // streamed (see DatasetSpec.streaming).
  absl::StatusOr<JobDataset> Index(JobConfig* config, const FetchAccess& access,
                                   const ScanLimits& limits,
                                   absl::Duration fetch_timeout);
  // The job over `dataset` (a streamed one with its feed).
  absl::StatusOr<std::shared_ptr<Job>> MakeJob(const std::string& id,
                                               const JobConfig& config,
                                               JobDataset dataset);
  // Whether the job over remote `names` streams: as it asked, else when
  // they are more than kMaxRemoteShards or larger (by their probes, kept
  // in probed->probed for the fetch) than the cache may give one user.
  absl::StatusOr<bool> Streams(const JobConfig& config,
                               const std::vector<std::string>& names,
                               RemoteShardSource* probed);
  // A streamed job's shard table (LoadShardTable) and shards.
  absl::StatusOr<JobDataset> Stream(const JobConfig& config,
                                    const std::vector<std::string>& names,
                                    std::unique_ptr<ObjectStore> store,
                                    RemoteShardSource remote,
                                    absl::Duration fetch_timeout);
  // *per_user (if given) says whether a refusal is the caller's own limit.
  absl::Status CheckLimits(const JobConfig& config, bool* per_user = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CheckLimits, ending orphans that stand in the way (see above).
  absl::Status MakeRoom(const JobConfig& config) ABSL_LOCKS_EXCLUDED(mu_);
  // The longest-unattended orphan of `owner` (of anyone if any_user);
  // only jobs over remote shards if remote_only.
  std::shared_ptr<Job> PickOrphan(uid_t owner, bool any_user,
                                  bool remote_only = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a running job nobody consumes, saying why ("job ID " + `why`): it
  // stays listed, ended, so that a trainer coming back learns it. Called
  // without mu_ (the job's listeners run).
  void EndOrphan(Job& job, const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);
  // For the live job `for_job`, ends the longest-unattended orphan of
  // `owner` over remote shards (the shard cache room it holds goes with
  // it); false if there is none, or if for_job is itself an orphan.
  bool ReclaimOrphan(uid_t owner, const std::string& for_job)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The shared-memory part: /dev/shm, the budget, the user's share.
  absl::Status CheckMemory(const JobConfig& config,
                           std::map<uid_t, Holding>& by_user,
                           bool* per_user) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The dataset indexes `uid`'s jobs hold with `index` added (each counted
  // once) against limits.max_index_bytes_per_user.
  absl::Status CheckIndexMemory(uid_t uid, const JobDataset& dataset) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A streamed job's two windows with those of its user's other running
  // streamed jobs against the user's share of the shard cache.
  absl::Status CheckStreamRoom(const JobConfig& config,
                               const JobDataset& dataset) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Jobs in all; what each user holds into *by_user.
  uint32_t CountHoldings(std::map<uid_t, Holding>* by_user) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the oldest ended job (of `owner` unless nullopt); false if none.
  bool ReapOldestEnded(std::optional<uid_t> owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops an ended job from the map and the worker pool (lock order: the
  // registry's mu_, then the pool's); returns the next entry.
  JobMap::iterator Forget(JobMap::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  WorkerPool* const pool_;
  std::atomic<bool> closing_{false};
  std::atomic<uint64_t> orphans_reclaimed_{0};
  DatasetCache datasets_;

  mutable absl::Mutex mu_;
  // Its limits are written under mu_ by SetLimits, and read under mu_.
  RegistryOptions options_;
  uint64_t budget_ ABSL_GUARDED_BY(mu_) = 0;           // resolved
  uint64_t budget_per_user_ ABSL_GUARDED_BY(mu_) = 0;  // resolved
  // Set when the cgroup's memory limit lowered the budget: that limit.
  std::optional<uint64_t> capped_by_ ABSL_GUARDED_BY(mu_);
  JobMap jobs_ ABSL_GUARDED_BY(mu_);
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
