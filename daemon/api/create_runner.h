// CreateRunner: runs CreateJob's slow part (scanning a dataset, reserving a
// ring) off the gRPC callback threads, a few calls at once, shared between
// users before anything else: at most `per_user` calls of one user run at
// once and the rest of that user's wait behind them, so a user whose
// dataset is slow to scan (huge, on a hung mount, or built to be slow)
// delays only that user's own calls. At most `total` run at once in all;
// when that is what holds calls back, the next one to start is taken from
// the users in turn.
//
// Thread-safety: thread-safe. The destructor runs everything posted (the
// work must finish its call), then returns.
#ifndef STOKER_DAEMON_API_CREATE_RUNNER_H_
#define STOKER_DAEMON_API_CREATE_RUNNER_H_

#include <sys/types.h>

#include <functional>
#include <memory>

#include "absl/status/status.h"

namespace stoker {

class CreateRunner {
 public:
  CreateRunner(int per_user = 2, int total = 16, int queued_per_user = 64);
  ~CreateRunner();
  CreateRunner(const CreateRunner&) = delete;
  CreateRunner& operator=(const CreateRunner&) = delete;

  // Runs `work` on a thread of its own when `user`'s turn comes;
  // RESOURCE_EXHAUSTED (and `work` is dropped) if `user` already has
  // `queued_per_user` calls waiting.
  absl::Status Post(uid_t user, std::function<void()> work);

  // What the runner and its threads share (opaque): the threads may still be
  // unlocking it when the destructor returns.
  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_CREATE_RUNNER_H_
