#include "daemon/jobs/worker_pool.h"

#include <time.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

// With on_error=REPLACE, how many following samples a worker tries before it
// gives up and fails the job (a dataset that is mostly unreadable).
constexpr int kMaxReplacements = 16;

uint64_t ThreadCpuNanos() {
  timespec ts;
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

}  // namespace

WorkerPool::WorkerPool(int threads, DecodeLimits limits,
                       const PathPolicy* policy)
    : limits_(limits), policy_(policy) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    stop_ = true;
    wake_.SignalAll();
  }
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Add(std::shared_ptr<Job> job) {
  absl::MutexLock lock(&mu_);
  scheduler_.Add(job->serial(), job->config().owner_uid, job->config().weight);
  jobs_.push_back(std::move(job));
  ++notifications_;
  wake_.SignalAll();
}

void WorkerPool::Remove(const Job* job) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(
      jobs_.begin(), jobs_.end(),
      [job](const std::shared_ptr<Job>& j) { return j.get() == job; });
  if (it == jobs_.end()) return;
  scheduler_.Remove(job->serial());
  jobs_.erase(it);
}

void WorkerPool::Notify() {
  absl::MutexLock lock(&mu_);
  ++notifications_;
  wake_.SignalAll();
}

bool WorkerPool::NextTask(std::shared_ptr<Job>* job, SampleTask* task) {
  std::vector<FairScheduler::Want> wants;
  std::vector<const std::shared_ptr<Job>*> wanting;
  wants.reserve(jobs_.size());
  wanting.reserve(jobs_.size());
  for (const std::shared_ptr<Job>& j : jobs_) {
    const Demand demand = j->demand();
    if (demand == Demand::kNone) continue;
    wants.push_back({j->serial(), demand == Demand::kWaiting});
    wanting.push_back(&j);
  }
  // The best first; one whose ring filled up meanwhile gives way to the
  // next.
  for (size_t i : scheduler_.Rank(wants)) {
    if ((*wanting[i])->TakeTask(task)) {
      *job = *wanting[i];
      scheduler_.Picked(wants[i].job);
      return true;
    }
  }
  return false;
}

void WorkerPool::Charge(const Job* job, uint64_t ns) {
  absl::MutexLock lock(&mu_);
  scheduler_.Charge(job->serial(), ns);
}

void WorkerPool::Run() {
  SampleWorker samples(limits_, policy_);
  // Samples are opened with their job owner's permissions; a worker keeps
  // that identity while it takes the same user's samples in a row.
  HeldIdentity identity;
  for (;;) {
    std::shared_ptr<Job> job;
    SampleTask task;
    {
      absl::MutexLock lock(&mu_);
      for (;;) {
        if (stop_) return;
        const uint64_t seen = notifications_;
        if (NextTask(&job, &task)) break;
        samples.CloseShards();  // nothing to do: hold no file open
        while (!stop_ && notifications_ == seen) wake_.Wait(&mu_);
      }
    }
    // CPU time, not wall time: a worker preempted mid-sample does not
    // charge its job for the time it did not run.
    const uint64_t start = ThreadCpuNanos();
    Process(*job, task, samples, identity);
    const uint64_t ns = ThreadCpuNanos() - start;
    busy_ns_.fetch_add(ns, std::memory_order_relaxed);
    job->AddWorkerTime(ns);
    Charge(job.get(), ns);
  }
}

void WorkerPool::SampleRates(absl::Time now) {
  absl::MutexLock lock(&rates_mu_);
  busy_rate_.Record(now, static_cast<double>(busy_ns_.load()));
  decoded_rate_.Record(now, static_cast<double>(samples_decoded_.load()));
}

double WorkerPool::busy_percent() const {
  absl::MutexLock lock(&rates_mu_);
  if (threads_.empty()) return 0;
  // Busy nanoseconds per second, over all workers.
  return std::min(100.0, busy_rate_.PerSecond() / 1e9 / threads_.size() * 100);
}

double WorkerPool::decoded_per_second() const {
  absl::MutexLock lock(&rates_mu_);
  return decoded_rate_.PerSecond();
}

void WorkerPool::Process(Job& job, const SampleTask& task,
                         SampleWorker& samples, HeldIdentity& identity) {
  const DatasetIndex& dataset = *task.dataset;
  const JobConfig& config = job.config();
  uint32_t sample = task.sample;
  absl::Status status;
  for (int attempt = 0;; ++attempt) {
    status = identity.Use(config.owner_files);
    if (status.ok()) {
      status = samples.Fill(
          config, job.serial(), dataset, sample,
          CopyKey(SampleKey(config.seed, task.epoch,
                            task.draw_id + (uint64_t{sample} - task.sample)),
                  task.copy),
          task.out);
    }
    if (status.ok()) {
      samples_decoded_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    decode_errors_.fetch_add(1, std::memory_order_relaxed);
    job.RecordError(dataset, sample, std::string(status.message()));
    if (config.on_error == OnError::kFail || attempt + 1 >= kMaxReplacements) {
      status = absl::DataLossError(absl::StrCat(
          "cannot decode sample ", sample, " '", dataset.Describe(sample),
          "': ", status.message(),
          config.on_error == OnError::kFail
              ? " (on_error=FAIL)"
              : " (and the samples after it; on_error=REPLACE gave up)"));
      break;
    }
    // Deterministic replacement: the next sample in dataset order.
    sample = (sample + 1) % dataset.size();
  }
  // A failure may end the job, which unlinks its ring: as the daemon.
  if (!status.ok()) identity.Release();
  job.FinishTask(task, status);
}

}  // namespace stoker
