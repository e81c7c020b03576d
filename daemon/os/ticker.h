// Ticker: calls a function every `period` on its own thread until destroyed.
//
// Thread-safety: the function runs on the ticker's thread only; destruction
// waits for a call in progress.
#ifndef STOKER_DAEMON_OS_TICKER_H_
#define STOKER_DAEMON_OS_TICKER_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace stoker {

class Ticker {
 public:
  Ticker(absl::Duration period, std::function<void()> tick);
  ~Ticker();
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

 private:
  void Run();

  const absl::Duration period_;
  const std::function<void()> tick_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_TICKER_H_
