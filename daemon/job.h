// Job: one dataset served as a sequence of batches through one ring.
//
// A job numbers its batches with a sequence number seq = epoch *
// batches_per_epoch + batch. Workers fill free slots with batches in seq
// order (TakeTask/FinishTask, one sample per task, several slots at once),
// across epoch boundaries; consumers receive them in seq order
// (NextDelivery), one per credit, and release them (Release).
//
// Exclusive and partition mode: each batch goes to one consumer; its release
// frees the slot. When a consumer goes away (Detach) the batches it held
// return to the front of the queue, for the next consumer (or another one).
// Broadcast: every consumer walks the whole sequence at its own pace
// (Consumer::next_seq); a slot is freed once no attached consumer still
// needs it; nothing is delivered or freed before min_consumers attached. A consumer more than max_lag
// batches behind the most advanced one is detached or skips ahead.
//
// Ownership: shared by the registry, the worker pool (while a worker decodes
// into it) and consumers. Thread-safety: all methods are thread-safe. Lock
// order: WorkerPool::mu_ before Job::mu_; the job never calls out (listener,
// on_work) while holding mu_.
#ifndef STOKER_DAEMON_JOB_H_
#define STOKER_DAEMON_JOB_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "daemon/peer.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/image_folder.h"
#include "daemon/pipeline.h"
#include "daemon/rate_meter.h"
#include "daemon/ring.h"
#include "daemon/epoch_order.h"

namespace stoker {

// The most consumers attached to one job at once.
inline constexpr uint32_t kMaxConsumersPerJob = 64;

enum class OnErrorPolicy { kReplace, kFail };
enum class JobPhase { kRunning, kFinished, kFailed, kDeleted };
enum class SharingMode { kExclusive, kBroadcast, kPartition };
enum class OnLagPolicy { kDetach, kSkip };

// How a job's batches are shared among its consumers (see SharingSpec in
// loader.proto). Validated: max_lag is in [1, slots - 1] for broadcast.
struct SharingConfig {
  SharingMode mode = SharingMode::kExclusive;
  uint32_t max_lag = 0;
  OnLagPolicy on_lag = OnLagPolicy::kDetach;
  uint32_t min_consumers = 1;
};

// A validated job spec (see job_spec.h).
struct JobConfig {
  std::string name;
  std::string dataset_path;
  uint32_t batch_size = 0;
  uint32_t slots = 0;
  Pipeline pipeline;  // what each image becomes, and in which dtype/layout
  uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
  uint32_t epochs = 1;  // 0: until deleted
  OnErrorPolicy on_error = OnErrorPolicy::kReplace;
  Sharding sharding;
  uint64_t start_epoch = 0;  // resume position
  uint64_t start_batch = 0;
  SharingConfig sharing;
  uint32_t weight = 1;  // share of the worker pool
  std::string owner;    // the client that created the job
  uid_t owner_uid = static_cast<uid_t>(-1);  // its user, from the socket
  std::string access_group;  // as asked for; resolved to access_gid
  std::optional<gid_t> access_gid;
};

// One sample for a worker to decode into row `row` of slot `slot`.
struct SampleTask {
  uint64_t seq = 0;
  uint64_t epoch = 0;
  uint32_t slot = 0;
  uint32_t row = 0;
  uint32_t sample = 0;  // dataset index
  uint8_t* image = nullptr;
  int64_t* label = nullptr;
  int64_t* index = nullptr;
};

// A batch handed to the consumer.
struct Delivered {
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint64_t epoch = 0;
  uint64_t batch = 0;
  uint32_t sample_count = 0;
};

enum class Delivery {
  kBatch,     // *out holds a batch, now leased
  kNothing,   // nothing to send now (no credit or no ready batch)
  kEndOfJob,  // every batch has been sent
  kEnded,     // the job (or this consumer) ended; *ended says why
};

// What the workers can do for a job now (WorkerPool's scheduling).
enum class Demand {
  kNone,      // no free slot and no open row, or the job is over
  kPrefetch,  // there is room in the ring
  kWaiting,   // and a consumer with credit has nothing to receive
};

class JobListener {
 public:
  virtual ~JobListener() = default;
  // Something may be deliverable (a batch, the end of the job, an error).
  // Called without the job's lock held, from any thread.
  virtual void OnDeliverable() = 0;
};

struct SampleErrorRecord {
  std::string path;
  std::string reason;
};

// What a consumer measured (Report in loader.proto), cumulative.
struct ConsumerReport {
  uint64_t batches = 0;
  uint64_t wait_us = 0;
  uint64_t step_us = 0;
  uint64_t recent_wait_us = 0;
  uint64_t recent_step_us = 0;
};

struct ConsumerCounters {
  uint64_t id = 0;
  std::string name;
  std::string client;
  uint64_t delivered = 0;
  uint64_t released = 0;
  uint64_t skipped = 0;
  uint32_t leased = 0;
  uint64_t lag = 0;
  bool reported = false;
  ConsumerReport report;
};

struct JobCounters {
  JobPhase phase = JobPhase::kRunning;
  uint64_t samples_decoded = 0;
  uint64_t batches_delivered = 0;
  uint64_t batches_released = 0;
  uint64_t decode_errors = 0;
  std::vector<SampleErrorRecord> errors;
  uint32_t filling_slots = 0;
  uint32_t ready_slots = 0;
  uint32_t leased_slots = 0;
  double decoded_per_second = 0;
  double delivered_per_second = 0;
  uint64_t worker_busy_ns = 0;
  std::vector<ConsumerCounters> consumers;
};

// Who attaches (for stats and logs).
struct ConsumerIdentity {
  std::string name;
  std::string client;
};

class Job {
 public:
  // Reserves the ring `segment_name` (RESOURCE_EXHAUSTED if /dev/shm cannot
  // hold it). INVALID_ARGUMENT if an epoch of this dataset, shard and batch
  // size would hold no batch. `on_work` is called (without locks) whenever slots free up.
  static absl::StatusOr<std::shared_ptr<Job>> Create(
      std::string id, JobConfig config, Dataset dataset,
      std::string segment_name, mode_t segment_mode,
      std::function<void()> on_work);

  // Constant after construction.
  const std::string& id() const { return id_; }
  const JobConfig& config() const { return config_; }
  JobAccess access() const {
    return {config_.owner_uid, config_.access_gid};
  }
  const Dataset& dataset() const { return dataset_; }
  const RingGeometry& geometry() const { return geometry_; }
  const std::string& segment_name() const { return segment_name_; }
  uint64_t batches_per_epoch() const { return plan_.batches_per_epoch(); }

  // Workers.
  bool TakeTask(SampleTask* task);
  void RecordError(uint32_t sample, std::string reason);
  // `status` is not OK when the sample (and its replacements) could not be
  // decoded and the job must fail.
  void FinishTask(const SampleTask& task, const absl::Status& status);

  // Scheduling: what workers could do for this job now, and the worker time
  // spent on it.
  Demand demand() const;
  void AddWorkerTime(uint64_t ns) { worker_busy_ns_.fetch_add(ns); }

  // Consumers, each named by its listener. *start: the first batch this
  // consumer's position counts from (exclusive and partition: the first
  // batch nobody has released; broadcast: where it joins).
  absl::Status Attach(std::shared_ptr<JobListener> listener,
                      const ConsumerIdentity& who, uint32_t credits,
                      uint64_t* start);
  void Detach(const JobListener* listener);
  void AddCredit(const JobListener* listener, uint32_t credits);
  // Ends every consumer that has held a batch for longer than `limit`
  // (DEADLINE_EXCEEDED, naming the batch): in exclusive and partition jobs
  // its batches go back to be delivered again, as if it had detached.
  void ExpireLeases(absl::Time now, absl::Duration limit);
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

  JobPhase phase() const;
  absl::Status error() const;  // why the job failed or ended
  JobCounters Counters() const;

 private:
  struct Filling {
    uint64_t seq;
    uint32_t slot;
    uint32_t count;
    uint32_t next_row;
    uint32_t done_rows;
  };
  // A batch in the ring, published and not yet freed.
  struct Published {
    uint32_t slot;
    uint32_t releases = 0;  // broadcast: consumers that released it
  };
  struct Consumer {
    std::shared_ptr<JobListener> listener;
    ConsumerIdentity who;
    uint64_t id = 0;
    uint32_t credits = 0;
    uint64_t next_seq = 0;                // broadcast: next batch for it
    std::map<uint32_t, uint64_t> leased;  // slot -> seq
    std::map<uint32_t, absl::Time> leased_at;  // slot -> when delivered
    absl::Status evicted;                 // broadcast: dropped for lagging
    uint64_t delivered = 0;
    uint64_t released = 0;
    uint64_t skipped = 0;
    bool reported = false;
    ConsumerReport report;
  };

  Job(std::string id, JobConfig config, Dataset dataset,
      std::unique_ptr<Ring> ring, std::function<void()> on_work);

  bool broadcast() const {
    return config_.sharing.mode == SharingMode::kBroadcast;
  }
  bool StartBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const std::vector<uint32_t>& Order(uint64_t epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Stop(JobPhase phase, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFreeRing() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next batch `c` may receive now, if any.
  std::optional<uint64_t> Deliverable(const Consumer& c) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddConsumer(
      std::shared_ptr<JobListener> listener, const ConsumerIdentity& who,
      uint32_t credits, uint64_t* start,
      std::vector<std::shared_ptr<JobListener>>* barrier_opened)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Hands batch `seq` to `c` (it has credit).
  void Lease(Consumer& c, uint64_t seq, Delivered* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the slot of `seq` (released by all who must): it may be refilled.
  void Complete(uint64_t seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Broadcast: frees every batch no active consumer still needs.
  void FreeBroadcast() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Broadcast: applies the lag policy to consumers more than max_lag
  // batches behind the leader; returns the consumers it evicted.
  std::vector<std::shared_ptr<JobListener>> EnforceLag()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Broadcast: `starving` has credit but its next batch cannot be decoded
  // because every slot holds an older batch: the consumer holding the
  // oldest one skips (SKIP, if it has unsent batches) or is evicted.
  std::vector<std::shared_ptr<JobListener>> RelievePinnedRing(
      const Consumer& starving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Evict(Consumer& c, absl::Status why,
             std::vector<std::shared_ptr<JobListener>>* evicted)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LagError(const Consumer& c, uint64_t lag,
                        absl::string_view why) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t Leader() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t OldestHeld(const Consumer& c) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t BroadcastJoinPoint() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<std::shared_ptr<JobListener>> Listeners() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string id_;
  const JobConfig config_;
  const Dataset dataset_;
  const BatchPlan plan_;
  const uint64_t total_batches_;  // UINT64_MAX when epochs == 0
  const uint64_t start_seq_;      // first batch served (resume)
  const RingGeometry geometry_;
  const std::string segment_name_;
  const std::function<void()> on_work_;
  std::atomic<uint64_t> worker_busy_ns_{0};

  mutable absl::Mutex mu_;
  JobPhase phase_ ABSL_GUARDED_BY(mu_) = JobPhase::kRunning;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Ring> ring_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::vector<uint32_t>> orders_ ABSL_GUARDED_BY(mu_);
  std::vector<Filling> filling_ ABSL_GUARDED_BY(mu_);
  uint64_t next_fill_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Exclusive and partition: the next batch never sent, and the published
  // batches nobody holds (requeued ones first, being older).
  uint64_t next_send_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<uint64_t> ready_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Published> published_ ABSL_GUARDED_BY(mu_);
  std::map<const JobListener*, Consumer> consumers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_consumer_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t attached_ever_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;  // batches freed for good
  uint32_t inflight_tasks_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t samples_decoded_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batches_delivered_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batches_released_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<SampleErrorRecord> errors_ ABSL_GUARDED_BY(mu_);
  std::set<uint32_t> error_samples_ ABSL_GUARDED_BY(mu_);
  RateMeter decoded_rate_ ABSL_GUARDED_BY(mu_);
  RateMeter delivered_rate_ ABSL_GUARDED_BY(mu_);
  uint64_t images_delivered_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOB_H_
