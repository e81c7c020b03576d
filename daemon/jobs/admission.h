// Admission: whether a new job fits stokerd's limits, and if not, what
// would make room for it. A pure class: no threads, no I/O, no clock. The
// registry (job_registry.h) takes an account of what every job holds under
// its lock, asks Next(), and carries out the step it answers, until it
// answers admit or refuse.
//
// The limits are per user (the uid the kernel reports for the caller), so
// that one user cannot take every job, or all the shared memory, from the
// others:
//   - jobs: --max_jobs in all, --max_jobs_per_user each. Ended jobs count
//     until they are forgotten; a job over a limit forgets the oldest ended
//     job first (the caller's, for the per-user limit).
//   - ring bytes: what /dev/shm has free, the budget in all (--shm_budget,
//     perhaps lowered by the cgroup's memory limit) and each user's share
//     (--shm_budget_per_user). Running jobs and reservations hold them.
//   - once the job's dataset is known: the dataset indexes one user's jobs
//     hold (--max_index_per_user, each index once however many jobs share
//     it), and a streamed job's two windows of shards with those of the
//     user's other streamed jobs against the user's share of the cache.
// Orphans (running jobs with no consumer whose creating process is gone: a
// trainer killed with SIGKILL) are kept so that their trainer can resume,
// but not against a live trainer: where a job or ring limit stands in the
// way, the longest-unattended orphan is ended first (the caller's own, then,
// for the limits in all, anyone's).
//
// Thread-safety: a const Admission may be shared; it keeps no state.
#ifndef STOKER_DAEMON_JOBS_ADMISSION_H_
#define STOKER_DAEMON_JOBS_ADMISSION_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace stoker {

// The limits, resolved (no zero meaning "default" left but in
// max_index_bytes_per_user).
struct AdmissionLimits {
  uint32_t max_jobs = 0;
  uint32_t max_jobs_per_user = 0;
  uint64_t budget = 0;  // ring bytes all jobs may hold
  uint64_t budget_per_user = 0;
  // Set when the cgroup's memory limit lowered the budget: that limit.
  std::optional<uint64_t> capped_by;
  uint64_t max_index_bytes_per_user = 0;  // 0: no limit
};

// One job, as admission sees it.
struct JobAccount {
  std::string id;
  uid_t owner = 0;
  bool running = false;
  uint64_t ring_bytes = 0;  // counts while running
  absl::Time ended_at = absl::InfiniteFuture();
  // Running, no consumer attached, and the process that created it gone.
  bool orphan = false;
  absl::Duration unattended;  // how long it has had no consumer
  bool remote = false;        // over remote shards
  // Its dataset's index (jobs over the same data share one) and its size.
  const void* index = nullptr;
  uint64_t index_bytes = 0;
  // A streamed job, and the shard cache room its two windows take (0 when
  // its shards' sizes are unknown).
  bool streamed = false;
  uint64_t stream_room = 0;
};

// Room a Create() holds between its check and its job.
struct Reservation {
  uid_t owner = 0;
  uint64_t ring_bytes = 0;
  uint64_t stream_room = 0;  // a streamed job's two windows
};

// Everything the jobs hold, taken at once.
struct Accounts {
  std::vector<JobAccount> jobs;
  std::vector<Reservation> reserved;
  std::string shm_dir;          // where rings live
  uint64_t shm_free = 0;        // its free bytes
  uint64_t cache_per_user = 0;  // the shard cache one user may hold
};

// The job asking to be admitted.
struct Candidate {
  uid_t owner = 0;
  uint64_t ring_bytes = 0;
  uint32_t slots = 1;
  // Known once its dataset is indexed: then the index and stream limits
  // apply too.
  bool dataset_known = false;
  const void* index = nullptr;
  uint64_t index_bytes = 0;
  // A streamed job read through the shard cache: its two windows.
  bool streamed = false;
  uint64_t stream_room = 0;
};

// What the registry does next.
struct AdmissionStep {
  enum class Kind { kAdmit, kForgetEnded, kEndOrphan, kRefuse };
  Kind kind = Kind::kAdmit;
  std::string job;       // kForgetEnded, kEndOrphan: which
  absl::Status refusal;  // kRefuse: RESOURCE_EXHAUSTED, what to do
};

class Admission {
 public:
  explicit Admission(AdmissionLimits limits = {}) : limits_(limits) {}

  // The next step toward admitting `candidate` over `accounts`. Orphans
  // are offered only with `end_orphans`.
  AdmissionStep Next(const Accounts& accounts, const Candidate& candidate,
                     bool end_orphans) const;
  // The longest-unattended orphan of `owner` (the caller's first; of anyone
  // if any_user), only those over remote shards if remote_only.
  static std::optional<std::string> PickOrphan(const Accounts& accounts,
                                               uid_t owner, bool any_user,
                                               bool remote_only);
  const AdmissionLimits& limits() const { return limits_; }

  // What one user holds: jobs (running or ended, plus reservations) and
  // ring bytes (running jobs and reservations).
  struct Holding {
    uint32_t jobs = 0;
    uint64_t bytes = 0;
  };

 private:
  // A refusal for a job or ring limit; *per_user says whether it is the
  // caller's own limit (then only its own orphans may make room).
  absl::Status CheckRoom(const Accounts& accounts, const Candidate& candidate,
                         std::map<uid_t, Holding>& by_user,
                         bool* per_user) const;
  // The ring-bytes part of CheckRoom: /dev/shm, the budget, the user's
  // share.
  absl::Status CheckRing(const Accounts& accounts, const Candidate& candidate,
                         std::map<uid_t, Holding>& by_user,
                         bool* per_user) const;
  absl::Status CheckIndex(const Accounts& accounts,
                          const Candidate& candidate) const;
  absl::Status CheckStreamRoom(const Accounts& accounts,
                               const Candidate& candidate) const;

  AdmissionLimits limits_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_ADMISSION_H_
