// Job: one dataset served as a sequence of batches through one ring.
//
// A job numbers its batches with a sequence number seq = epoch *
// batches_per_epoch + batch. Workers fill free slots with batches in seq
// order (TakeTask/FinishTask, one sample per task, several slots at once);
// the consumer receives them strictly in seq order (NextDelivery), one per
// credit, and releases them (Release), which frees the slot for the next
// batch. When a consumer goes away (Detach) the batches it held return to the
// front of the queue and are delivered again to the next consumer.
//
// Ownership: shared by the registry, the worker pool (while a worker decodes
// into it) and consumers. Thread-safety: all methods are thread-safe. Lock
// order: WorkerPool::mu_ before Job::mu_; the job never calls out (listener,
// on_work) while holding mu_.
#ifndef STOKER_DAEMON_JOB_H_
#define STOKER_DAEMON_JOB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/image_folder.h"
#include "daemon/jpeg_decoder.h"
#include "daemon/pipeline.h"
#include "daemon/ring.h"
#include "daemon/sampler.h"

namespace stoker {

enum class OnErrorPolicy { kReplace, kFail };
enum class JobPhase { kRunning, kFinished, kFailed, kDeleted };

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
  kEnded,     // the job failed or was deleted; *ended says why
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

struct JobCounters {
  JobPhase phase = JobPhase::kRunning;
  uint64_t samples_decoded = 0;
  uint64_t batches_delivered = 0;
  uint64_t batches_released = 0;
  uint64_t decode_errors = 0;
  std::vector<SampleErrorRecord> errors;
  uint32_t ready_slots = 0;
  uint32_t leased_slots = 0;
  uint32_t consumers = 0;
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

  // Consumers. One consumer at a time for now.
  // *first_unreleased: the seq of the first batch nobody has released yet.
  absl::Status Attach(std::shared_ptr<JobListener> listener, uint32_t credits,
                      uint64_t* first_unreleased);
  void Detach(const JobListener* listener);
  void AddCredit(uint32_t credits);
  Delivery NextDelivery(Delivered* out, absl::Status* ended);
  absl::Status Release(uint32_t slot, uint64_t generation);

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

  Job(std::string id, JobConfig config, Dataset dataset,
      std::unique_ptr<Ring> ring, std::function<void()> on_work);

  bool StartBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const std::vector<uint32_t>& Order(uint64_t epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Stop(JobPhase phase, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeFreeRing() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

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

  mutable absl::Mutex mu_;
  JobPhase phase_ ABSL_GUARDED_BY(mu_) = JobPhase::kRunning;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Ring> ring_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::vector<uint32_t>> orders_ ABSL_GUARDED_BY(mu_);
  std::vector<Filling> filling_ ABSL_GUARDED_BY(mu_);
  uint64_t next_fill_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_send_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, uint32_t> ready_ ABSL_GUARDED_BY(mu_);   // seq -> slot
  std::map<uint32_t, uint64_t> leased_ ABSL_GUARDED_BY(mu_);  // slot -> seq
  uint32_t inflight_tasks_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<JobListener> listener_ ABSL_GUARDED_BY(mu_);
  uint32_t credits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t samples_decoded_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batches_delivered_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t batches_released_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t decode_errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<SampleErrorRecord> errors_ ABSL_GUARDED_BY(mu_);
  std::set<uint32_t> error_samples_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOB_H_
