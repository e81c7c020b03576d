#include "daemon/worker_pool.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

// With on_error=REPLACE, how many following samples a worker tries before it
// gives up and fails the job (a dataset that is mostly unreadable).
constexpr int kMaxReplacements = 16;

}  // namespace

WorkerPool::WorkerPool(int threads, DecodeLimits limits) : limits_(limits) {
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
  jobs_.push_back(std::move(job));
  ++notifications_;
  wake_.SignalAll();
}

void WorkerPool::Remove(const Job* job) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                             [job](const auto& j) { return j.get() == job; }),
              jobs_.end());
}

void WorkerPool::Notify() {
  absl::MutexLock lock(&mu_);
  ++notifications_;
  wake_.SignalAll();
}

bool WorkerPool::NextTask(std::shared_ptr<Job>* job, SampleTask* task) {
  for (size_t tried = 0; tried < jobs_.size(); ++tried) {
    cursor_ = (cursor_ + 1) % jobs_.size();
    if (jobs_[cursor_]->TakeTask(task)) {
      *job = jobs_[cursor_];
      return true;
    }
  }
  return false;
}

void WorkerPool::Run() {
  SampleDecoder decoder(limits_);
  for (;;) {
    std::shared_ptr<Job> job;
    SampleTask task;
    {
      absl::MutexLock lock(&mu_);
      for (;;) {
        if (stop_) return;
        const uint64_t seen = notifications_;
        if (NextTask(&job, &task)) break;
        while (!stop_ && notifications_ == seen) wake_.Wait(&mu_);
      }
    }
    Process(*job, task, decoder);
  }
}

void WorkerPool::Process(Job& job, const SampleTask& task,
                         SampleDecoder& decoder) {
  const Dataset& dataset = job.dataset();
  const JobConfig& config = job.config();
  uint32_t sample = task.sample;
  absl::Status status;
  for (int attempt = 0;; ++attempt) {
    const Sample& s = dataset.samples[sample];
    status = decoder.Process(s.path, config.pipeline,
                             SampleKey(config.seed, task.epoch, sample),
                             task.image);
    if (status.ok()) {
      *task.label = s.label;
      *task.index = sample;
      samples_decoded_.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    decode_errors_.fetch_add(1, std::memory_order_relaxed);
    job.RecordError(sample, std::string(status.message()));
    if (config.on_error == OnErrorPolicy::kFail ||
        attempt + 1 >= kMaxReplacements) {
      status = absl::DataLossError(absl::StrCat(
          "cannot decode sample ", sample, " '", s.path,
          "': ", status.message(),
          config.on_error == OnErrorPolicy::kFail
              ? " (on_error=FAIL)"
              : " (and the samples after it; on_error=REPLACE gave up)"));
      break;
    }
    // Deterministic replacement: the next sample in dataset order.
    sample = static_cast<uint32_t>((sample + 1) % dataset.samples.size());
  }
  job.FinishTask(task, status);
}

}  // namespace stoker
