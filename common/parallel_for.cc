#include "common/parallel_for.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace stoker {

absl::Status ParallelFor::Run(
    size_t n, int threads, const std::function<absl::Status(size_t i)>& body) {
  stopped_ = false;
  std::atomic<size_t> next{0};
  absl::Mutex mu;
  absl::Status failed;
  const auto work = [&] {
    for (size_t i; !stopped_.load() && (i = next.fetch_add(1)) < n;) {
      absl::Status status = body(i);
      if (status.ok()) continue;
      absl::MutexLock lock(&mu);
      // The first failure, not the cancellations it caused.
      if (!stopped_.exchange(true)) failed = std::move(status);
      return;
    }
  };
  {
    std::vector<std::jthread> workers;  // joined however this scope ends
    const size_t count = std::min<size_t>(std::max(threads, 1), n);
    for (size_t t = 0; t < count; ++t) workers.emplace_back(work);
  }
  absl::MutexLock lock(&mu);
  return failed;
}

}  // namespace stoker
