// JobRegistry: the daemon's live jobs by id. Creates a job (validated spec,
// scanned dataset, reserved ring), hands it to the worker pool, and ends and
// forgets it on delete.
//
// Thread-safety: thread-safe. Create() does file-system I/O and may take a
// while for big datasets: call it off the gRPC callback threads.
#ifndef STOKER_DAEMON_JOBS_JOB_REGISTRY_H_
#define STOKER_DAEMON_JOBS_JOB_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/jobs/job.h"
#include "daemon/jobs/worker_pool.h"
#include "daemon/os/path_policy.h"

namespace stoker {

struct RegistryOptions {
  std::string segment_prefix;  // see SegmentPrefix()
  // Only stokerd's own user may open a ring by name; clients get a
  // read-only descriptor through the ring socket instead.
  mode_t segment_mode = 0600;
  uint32_t max_jobs = 64;
  uint32_t max_jobs_per_client = 16;
  // Total bytes all live rings may reserve; 0: only /dev/shm's free space.
  uint64_t shm_budget_bytes = 0;
  std::string shm_dir = "/dev/shm";  // where POSIX shared memory lives
  // Where datasets may lie; must outlive the registry (nullptr: anywhere).
  const PathPolicy* dataset_paths = nullptr;
};

// Job ids are "j" and 12 hex digits; longer ones are refused unread.
inline constexpr size_t kMaxJobIdBytes = 64;

// Free bytes in `dir`'s file system (0 if it cannot be read).
uint64_t FreeBytes(const std::string& dir);

class JobRegistry {
 public:
  JobRegistry(RegistryOptions options, WorkerPool* pool);

  // RESOURCE_EXHAUSTED, naming the numbers, past --max_jobs, the owner's
  // --max_jobs_per_client, the shared-memory budget or /dev/shm's free space.
  absl::StatusOr<std::shared_ptr<Job>> Create(JobConfig config);
  // NOT_FOUND naming the id.
  absl::StatusOr<std::shared_ptr<Job>> Get(const std::string& id) const;
  std::vector<std::shared_ptr<Job>> List() const;
  absl::Status Delete(const std::string& id);
  // Ends every job with `why` and refuses new ones (daemon shutdown).
  void CloseAll(const absl::Status& why);
  uint64_t shm_bytes() const;
  uint64_t shm_budget_bytes() const;
  // Changes the limits new jobs are checked against (SIGHUP); running jobs
  // are left alone.
  void SetLimits(uint32_t max_jobs, uint32_t max_jobs_per_client,
                 uint64_t shm_budget_bytes);
  // segment_prefix, segment_mode, shm_dir and dataset_paths never change.
  const RegistryOptions& options() const { return options_; }

 private:
  std::string NewJobId();
  absl::Status CheckLimits(const JobConfig& config) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  WorkerPool* const pool_;

  mutable absl::Mutex mu_;
  // Its limits (max_jobs, max_jobs_per_client, shm_budget_bytes) are
  // written under mu_ by SetLimits, and read under mu_.
  RegistryOptions options_;
  std::map<std::string, std::shared_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_JOB_REGISTRY_H_
