#include "daemon/jobs/fetch_threads.h"

namespace stoker {

FetchThreads::FetchThreads(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

FetchThreads::~FetchThreads() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    tasks_.clear();
  }
  threads_.clear();  // joins
}

void FetchThreads::Post(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (!closing_) tasks_.push_back(std::move(task));
}

void FetchThreads::Run() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &FetchThreads::HasWork));
      if (closing_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace stoker
