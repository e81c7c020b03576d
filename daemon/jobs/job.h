// Job: one dataset served as a sequence of batches through one ring
// (job.cc; how it ends, its periodic checks and what it reports:
// job_lifetime.cc).
//
// A job numbers its batches with a sequence number seq = epoch *
// batches_per_epoch + batch. Workers fill free slots with batches in seq
// order (TakeTask/FinishTask, one sample per task, several slots at once),
// across epoch boundaries; consumers receive them (NextDelivery), one per
// credit, and release them (Release). Who receives which batch, and when a
// slot may be refilled, is the job's DeliveryPolicy (delivery_policy.h):
// one per way of sharing a job.
//
// Ownership: shared by the registry, the worker pool (while a worker decodes
// into it) and consumers. Thread-safety: all methods are thread-safe. Lock
// order: WorkerPool::mu_ before Job::mu_; the job never calls out (listener,
// on_work) while holding mu_.
#ifndef STOKER_DAEMON_JOBS_JOB_H_
#define STOKER_DAEMON_JOBS_JOB_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/lease_table.h"
#include "common/unique_fd.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/jobs/delivery.h"
#include "daemon/jobs/delivery_policy.h"
#include "daemon/jobs/epoch_order.h"
#include "daemon/jobs/job_tally.h"
#include "daemon/jobs/sample_worker.h"  // SlotRow
#include "daemon/jobs/stream_feed.h"
#include "daemon/shm/ring.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// One sample for a worker to decode into row `row` of slot `slot`.
struct SampleTask {
  uint64_t seq = 0;
  uint64_t epoch = 0;
  uint32_t slot = 0;
  uint32_t row = 0;
  uint32_t sample = 0;  // in `dataset`
  // What the sample's draws are keyed by: its number in the whole dataset
  // (`sample`, except in a streamed job's window).
  uint64_t draw_id = 0;
  uint32_t copy = 0;  // repeated augmentation: which copy of the sample
  // The job's index, and where the sample's values go; valid until
  // FinishTask.
  const DatasetIndex* dataset = nullptr;
  // A streamed job's window (which `dataset` is), held until the task is
  // done: the feed lets a window go once its last row is handed out.
  std::shared_ptr<const DatasetIndex> window;
  SlotRow out;
};

// What the workers can do for a job now (WorkerPool's scheduling).
enum class Demand {
  kNone,      // no free slot and no open row, or the job is over
  kPrefetch,  // there is room in the ring
  kWaiting,   // and a consumer with credit has nothing to receive
};

class Job {
 public:
  // Reserves the ring `segment_name` (RESOURCE_EXHAUSTED if /dev/shm cannot
  // hold it). INVALID_ARGUMENT if an epoch of this dataset, shard and batch
  // size would hold no batch. `on_work` is called (without locks) whenever
  // slots free up. A streamed job has `stream` and no `dataset`.
  static absl::StatusOr<std::shared_ptr<Job>> Create(
      std::string id, JobConfig config,
      std::shared_ptr<const DatasetIndex> dataset, std::string segment_name,
      mode_t segment_mode, std::function<void()> on_work,
      std::shared_ptr<StreamFeed> stream = nullptr);

  // Constant after construction. serial(): unique among the jobs of this
  // process, never reused (ids are names; a serial keys per-job caches).
  const std::string& id() const { return id_; }
  uint64_t serial() const { return serial_; }
  const JobConfig& config() const { return config_; }
  JobAccess access() const { return {config_.owner_uid, config_.access_gid}; }
  const DatasetSummary& dataset() const { return dataset_; }
  // The dataset index while the job holds it (nullptr once it let go, after
  // it ended).
  const DatasetIndex* held_index() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return index_.get();
  }
  // A streamed job's feed (nullptr for the others).
  const StreamFeed* stream() const { return stream_.get(); }
  const RingGeometry& geometry() const { return geometry_; }
  const std::string& segment_name() const { return segment_name_; }
  uint64_t batches_per_epoch() const { return plan_.batches_per_epoch(); }

  // Workers.
  bool TakeTask(SampleTask* task);
  void RecordError(const DatasetIndex& index, uint32_t sample,
                   std::string reason);
  // `status` is not OK when the sample (and its replacements) could not be
  // decoded and the job must fail.
  void FinishTask(const SampleTask& task, const absl::Status& status);

  // Scheduling: what workers could do for this job now, and the worker time
  // spent on it.
  Demand demand() const;
  void AddWorkerTime(uint64_t ns) { worker_busy_ns_.fetch_add(ns); }

  // Consumers, each named by its listener. *start: the first batch this
  // consumer's position counts from (see DeliveryPolicy::Attach).
  // `leases`: the consumer's lease table (common/lease_table.h), in which
  // each batch it is sent is recorded, and revoked when it is taken back.
  absl::Status Attach(std::shared_ptr<JobListener> listener,
                      const ConsumerIdentity& who, uint32_t credits,
                      uint64_t* start,
                      std::shared_ptr<LeaseTable> leases = nullptr);
  // `why` is recorded in its lease table (see DeliveryPolicy::Detach).
  void Detach(const JobListener* listener,
              const absl::Status& why =
                  absl::CancelledError("the consumer closed its stream"));
  void AddCredit(const JobListener* listener, uint32_t credits);
  // Called about twice a second. Ends every consumer that has held a batch
  // for longer than `lease_limit` (DEADLINE_EXCEEDED, naming the batch): in
  // exclusive and partition jobs its batches go back to be delivered again,
  // as if it had detached. Applies broadcast's lag policy (it has a grace
  // period). Fails the job if its ring was deleted by another process.
  void Tick(absl::Time now, absl::Duration lease_limit);
  // The ring socket's part: a read-only descriptor of the ring (the job's
  // error once it has ended), and a consumer's lease table.
  absl::StatusOr<UniqueFd> RingFd();
  absl::StatusOr<UniqueFd> TakeLeaseFd(const std::string& token, uid_t uid);
  void Report(const JobListener* listener, const ConsumerReport& report);
  Delivery NextDelivery(const JobListener* listener, Delivered* out,
                        absl::Status* ended);
  // INVALID_ARGUMENT for a slot out of range; FAILED_PRECONDITION for a stale
  // generation or a slot this consumer does not hold (double release, or
  // another consumer's slot).
  absl::Status Release(const JobListener* listener, uint32_t slot,
                       uint64_t generation);

  // Records the rates GetStats reports; called about twice a second.
  void SampleRates(absl::Time now);

  // Stops the job for good (DeleteJob, shutdown): the consumer is told
  // `why`, the ring's name is unlinked at once.
  void End(const absl::Status& why);

  JobState state() const;
  absl::Status error() const;  // why the job failed or ended
  // When the job stopped running (InfiniteFuture while it runs).
  absl::Time ended_at() const;
  // How long the job has had no consumer attached as of `now`: since it was
  // created or its last consumer left; zero while one is attached. Called
  // periodically (the registry's reaper); the time counts from the first
  // call that sees it alone after one that did not.
  absl::Duration Unattended(absl::Time now);
  // Whether a consumer is attached now.
  bool Attended() const;
  JobCounters Counters() const;

 private:
  struct Filling {
    uint64_t seq;
    uint32_t slot;
    uint32_t count;
    uint32_t next_row;
    uint32_t done_rows;
  };
  // Listeners to wake, and whether slots were freed for the workers.
  struct Wake {
    std::vector<std::shared_ptr<JobListener>> listeners;
    bool work = false;
  };

  Job(std::string id, JobConfig config,
      std::shared_ptr<const DatasetIndex> index,
      std::shared_ptr<StreamFeed> stream, std::unique_ptr<Ring> ring,
      std::function<void()> on_work);

  bool running() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return state_ == JobState::kRunning && ring_ != nullptr;
  }
  bool StartBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Filling* OpenBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const std::vector<uint32_t>& Order(uint64_t epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TakeTask's part under the lock.
  bool FillTask(SampleTask* task, Wake* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // (epoch, position in this rank's epoch) of row `row` of batch `seq`.
  std::pair<uint64_t, uint64_t> PositionOf(uint64_t seq, uint32_t row) const;
  // A streamed job's task for open's next row: false while its window is
  // fetched, or when the fetch failed (the job then fails; whom to wake in
  // *wake).
  bool PlaceStreamed(const Filling& open, SampleTask* task, Wake* wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the slots the policy let go of, and finishes the job after the
  // last one; returns whom to wake.
  Wake Apply(const PolicyEffects& effects) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Stop(JobState state, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails the job if another process deleted its ring; true if it did.
  bool CheckRing() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lets go of the ring and the index once the job has ended and no task
  // is in flight.
  void MaybeFreeRing() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const Wake& wake) ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const std::string id_;
  const uint64_t serial_;
  const JobConfig config_;
  const DatasetSummary dataset_;
  const BatchPlan plan_;
  const uint64_t total_batches_;  // UINT64_MAX when epochs == 0
  const uint64_t start_seq_;      // first batch served (resume)
  const RingGeometry geometry_;
  const std::string segment_name_;
  const std::function<void()> on_work_;
  const std::shared_ptr<StreamFeed> stream_;
  std::atomic<uint64_t> worker_busy_ns_{0};

  mutable absl::Mutex mu_;
  JobState state_ ABSL_GUARDED_BY(mu_) = JobState::kRunning;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  absl::Time ended_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time alone_since_ ABSL_GUARDED_BY(mu_) = absl::Now();
  std::unique_ptr<Ring> ring_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const DatasetIndex> index_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DeliveryPolicy> policy_ ABSL_GUARDED_BY(mu_);
  JobTally tally_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::vector<uint32_t>> orders_ ABSL_GUARDED_BY(mu_);
  std::vector<Filling> filling_ ABSL_GUARDED_BY(mu_);
  uint64_t next_fill_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;  // batches freed for good
  uint32_t inflight_tasks_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_JOB_H_
