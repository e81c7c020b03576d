#include "daemon/os/ticker.h"

namespace stoker {

Ticker::Ticker(absl::Duration period, std::function<void()> tick)
    : period_(period), tick_(std::move(tick)), thread_([this] { Run(); }) {}

Ticker::~Ticker() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void Ticker::Run() {
  for (;;) {
    tick_();
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(&stop_), period_)) return;
  }
}

}  // namespace stoker
