// ConsumerLink and ConsumerSet (consume_reactor.h): how jobs and the daemon
// reach live Consume streams.
#include "daemon/api/consume_reactor.h"

namespace stoker {

ConsumeReactor* ConsumerLink::Acquire() {
  absl::MutexLock lock(&mu_);
  if (reactor_ != nullptr) ++users_;
  return reactor_;
}

void ConsumerLink::Unacquire() {
  absl::MutexLock lock(&mu_);
  --users_;
}

void ConsumerLink::OnDeliverable() {
  if (ConsumeReactor* reactor = Acquire()) {
    reactor->Pump();
    Unacquire();
  }
}

void ConsumerLink::Shutdown(const absl::Status& why) {
  if (ConsumeReactor* reactor = Acquire()) {
    reactor->FinishOnce(why);
    Unacquire();
  }
}

void ConsumerLink::Retire() {
  absl::MutexLock lock(&mu_);
  reactor_ = nullptr;
  mu_.Await(absl::Condition(
      +[](int* users) { return *users == 0; }, &users_));
}

void ConsumerSet::Add(std::shared_ptr<ConsumerLink> link) {
  absl::MutexLock lock(&mu_);
  links_.insert(std::move(link));
}

void ConsumerSet::Remove(const ConsumerLink* link) {
  absl::MutexLock lock(&mu_);
  for (auto it = links_.begin(); it != links_.end(); ++it) {
    if (it->get() == link) {
      links_.erase(it);
      return;
    }
  }
}

void ConsumerSet::ShutdownAll(const absl::Status& why) {
  std::set<std::shared_ptr<ConsumerLink>> links;
  {
    absl::MutexLock lock(&mu_);
    links = links_;
  }
  for (const auto& link : links) link->Shutdown(why);
}

}  // namespace stoker
