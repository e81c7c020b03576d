// ParallelFor: runs body(i) for each i in [0, n) on a few threads, where
// the first error wins: the items not begun are not run, work in flight may
// see stopped() and give up, and Run returns that error (not the
// cancellations it caused).
//
// Thread-safety: one Run at a time (each starts afresh); stopped() may be
// read from any thread.
#ifndef STOKER_COMMON_PARALLEL_FOR_H_
#define STOKER_COMMON_PARALLEL_FOR_H_

#include <atomic>
#include <cstddef>
#include <functional>

#include "absl/status/status.h"

namespace stoker {

class ParallelFor {
 public:
  // OK when every body returned OK. `threads` is at least 1 and at most n.
  absl::Status Run(size_t n, int threads,
                   const std::function<absl::Status(size_t i)>& body);
  // Whether a body failed: for work in flight to give up early.
  bool stopped() const { return stopped_.load(); }

 private:
  std::atomic<bool> stopped_{false};
};

}  // namespace stoker

#endif  // STOKER_COMMON_PARALLEL_FOR_H_
