#include "daemon/api/create_runner.h"

#include <deque>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace stoker {

struct CreateRunner::State {
  State(int per_user, int total, size_t queued_per_user)
      : per_user(per_user), total(total), queued_per_user(queued_per_user) {}

  // Takes the next work that may start now, if any, counting it as running.
  bool TakeNext(uid_t* user, std::function<void()>* work)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (threads >= total || waiting.empty()) return false;
    // Users in turn, starting after the last one started.
    auto it = waiting.upper_bound(last_user);
    for (size_t n = 0; n < waiting.size(); ++n, ++it) {
      if (it == waiting.end()) it = waiting.begin();
      if (running[it->first] >= per_user) continue;
      *user = it->first;
      *work = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty()) waiting.erase(it);
      ++running[*user];
      ++threads;
      last_user = *user;
      return true;
    }
    return false;
  }

  const int per_user;
  const int total;
  const size_t queued_per_user;
  absl::Mutex mu;
  std::map<uid_t, std::deque<std::function<void()>>> waiting
      ABSL_GUARDED_BY(mu);
  std::map<uid_t, int> running ABSL_GUARDED_BY(mu);
  int threads ABSL_GUARDED_BY(mu) = 0;
  uid_t last_user ABSL_GUARDED_BY(mu) = 0;
};

namespace {

void RunAll(std::shared_ptr<CreateRunner::State> state, uid_t user,
            std::function<void()> work) {
  for (;;) {
    work();
    work = nullptr;
    absl::MutexLock lock(&state->mu);
    --state->threads;
    if (--state->running[user] == 0) state->running.erase(user);
    // Carry on with the next call that may start, on this thread.
    if (!state->TakeNext(&user, &work)) return;
  }
}

}  // namespace

CreateRunner::CreateRunner(int per_user, int total, int queued_per_user)
    : state_(std::make_shared<State>(per_user, total,
                                     static_cast<size_t>(queued_per_user))) {}

CreateRunner::~CreateRunner() {
  absl::MutexLock lock(&state_->mu);
  state_->mu.Await(absl::Condition(
      +[](State* s) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return s->threads == 0 && s->waiting.empty();
      },
      state_.get()));
}

absl::Status CreateRunner::Post(uid_t user, std::function<void()> work) {
  absl::MutexLock lock(&state_->mu);
  std::deque<std::function<void()>>& queue = state_->waiting[user];
  if (queue.size() >= state_->queued_per_user) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "uid ", user, " already has ", queue.size(),
        " CreateJob calls waiting behind its running ones; wait for them"));
  }
  queue.push_back(std::move(work));
  std::function<void()> next;
  while (state_->TakeNext(&user, &next)) {
    std::thread(RunAll, state_, user, std::move(next)).detach();
  }
  return absl::OkStatus();
}

}  // namespace stoker
