// WorkerPool: the daemon's decode threads, created once at start and shared by
// every job for the daemon's whole life.
//
// Each worker takes one sample at a time. A job offers work only while it has
// a free slot (or a slot being filled), so memory stays bounded by the rings
// (backpressure). Which job a free worker serves is FairScheduler's choice
// (two levels, users then weighted jobs; see fair_scheduler.h), charged
// with the worker's CPU time for the sample.
// Workers sleep when no job has work and are woken by Notify().
//
// Thread-safety: all methods are thread-safe. Lock order: mu_ before any
// Job's lock.
#ifndef STOKER_DAEMON_JOBS_WORKER_POOL_H_
#define STOKER_DAEMON_JOBS_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/image/sample_decoder.h"
#include "daemon/jobs/fair_scheduler.h"
#include "daemon/jobs/job.h"
#include "daemon/jobs/rate_meter.h"
#include "daemon/jobs/sample_worker.h"

namespace stoker {

class WorkerPool {
 public:
  // Workers read only files `policy` allows (nullptr: any); the policy
  // must outlive the pool.
  WorkerPool(int threads, DecodeLimits limits,
             const PathPolicy* policy = nullptr);
  ~WorkerPool();  // Stop()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Add(std::shared_ptr<Job> job);
  void Remove(const Job* job);
  // Some job may have work now.
  void Notify();
  // Finishes the samples in progress and joins the threads.
  void Stop();

  int size() const { return static_cast<int>(threads_.size()); }
  uint64_t samples_decoded() const { return samples_decoded_.load(); }
  uint64_t decode_errors() const { return decode_errors_.load(); }
  uint64_t busy_ns() const { return busy_ns_.load(); }

  // Records busy time and samples for the rates below; about twice a second.
  void SampleRates(absl::Time now);
  // Over the last few seconds: share of worker time spent decoding (0..100),
  // and samples decoded per second.
  double busy_percent() const;
  double decoded_per_second() const;

 private:
  void Run();
  bool NextTask(std::shared_ptr<Job>* job, SampleTask* task)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Charge(const Job* job, uint64_t ns);
  void Process(Job& job, const SampleTask& task, SampleWorker& samples,
               HeldIdentity& identity);

  const DecodeLimits limits_;
  const PathPolicy* const policy_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> samples_decoded_{0};
  std::atomic<uint64_t> decode_errors_{0};
  std::atomic<uint64_t> busy_ns_{0};

  absl::Mutex mu_;
  absl::CondVar wake_;
  std::vector<std::shared_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
  FairScheduler scheduler_ ABSL_GUARDED_BY(mu_);
  uint64_t notifications_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;

  mutable absl::Mutex rates_mu_;
  RateMeter busy_rate_ ABSL_GUARDED_BY(rates_mu_);
  RateMeter decoded_rate_ ABSL_GUARDED_BY(rates_mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_WORKER_POOL_H_
