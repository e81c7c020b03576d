// FetchThreads: a few threads that run streamed jobs' shard fetches (one
// window of shards per task), so that a job never waits on the network on
// its workers' threads and a fetch outlives nothing it needs: a task holds
// what it uses (shared_ptr), and the threads are joined when the registry
// that owns them goes, after its jobs.
//
// Thread-safety: thread-safe.
#ifndef STOKER_DAEMON_JOBS_FETCH_THREADS_H_
#define STOKER_DAEMON_JOBS_FETCH_THREADS_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace stoker {

class FetchThreads {
 public:
  explicit FetchThreads(int threads);
  ~FetchThreads();  // runs no more tasks; waits for those running
  FetchThreads(const FetchThreads&) = delete;
  FetchThreads& operator=(const FetchThreads&) = delete;

  // Runs `task` on one of the threads, in the order posted.
  void Post(std::function<void()> task);

 private:
  void Run();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return closing_ || !tasks_.empty();
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::jthread> threads_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_FETCH_THREADS_H_
