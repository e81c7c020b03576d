// InputAccount: where a trainer's time goes around Next() (see InputStats):
// totals, and per-batch samples for a recent window, and the reports the
// daemon hears of them about once a second.
//
// Ownership: owned by its ConsumerCore. Thread-safety: thread-safe; mu_ is
// a leaf (nothing else is called while it is held).
#ifndef STOKER_CLIENT_SRC_INPUT_ACCOUNT_H_
#define STOKER_CLIENT_SRC_INPUT_ACCOUNT_H_

#include <cstdint>
#include <deque>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "stoker/consumer.h"
#include "stoker/v1/loader.pb.h"

namespace stoker::internal {

class InputAccount {
 public:
  // When the Next() starting at `now` began waiting: now, or when an
  // earlier Next() that ran out of its time began (a wait cut short by its
  // deadline goes on in the next call: the time counts as waiting, not as
  // the trainer's step).
  absl::Time BeginWait(absl::Time now);
  // The Next() that began waiting at `called` ran out of its time.
  void WaitCutShort(absl::Time called);
  // Accounts one Next() that began waiting at `called` and returned at
  // `now`. About once a second, while `can_report` (the stream takes
  // requests), the report to send the daemon.
  std::optional<v1::ConsumeRequest> Account(absl::Time called, absl::Time now,
                                            bool can_report);
  InputStats stats() const;

 private:
  struct Sample {
    absl::Time at;
    absl::Duration wait;
    absl::Duration step;
  };
  v1::ConsumeRequest Report() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  uint64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration wait_ ABSL_GUARDED_BY(mu_);
  absl::Duration step_ ABSL_GUARDED_BY(mu_);
  std::deque<Sample> recent_ ABSL_GUARDED_BY(mu_);
  absl::Duration recent_wait_ ABSL_GUARDED_BY(mu_);
  absl::Duration recent_step_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::Time> last_return_ ABSL_GUARDED_BY(mu_);
  // Set while a Next() that ran out of time is to be continued.
  std::optional<absl::Time> waiting_since_ ABSL_GUARDED_BY(mu_);
  absl::Time last_report_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_INPUT_ACCOUNT_H_
