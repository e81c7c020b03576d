#include "client/src/input_account.h"

namespace stoker::internal {
namespace {

// The recent window, and how often the daemon hears of it.
constexpr absl::Duration kRecentWindow = absl::Seconds(10);
constexpr absl::Duration kReportEvery = absl::Seconds(1);

uint64_t Micros(absl::Duration d) {
  return static_cast<uint64_t>(absl::ToInt64Microseconds(d));
}

double Percent(absl::Duration wait, absl::Duration step) {
  const absl::Duration total = wait + step;
  return total <= absl::ZeroDuration()
             ? 0
             : 100.0 * absl::FDivDuration(wait, total);
}

}  // namespace

absl::Time InputAccount::BeginWait(absl::Time now) {
  absl::MutexLock lock(&mu_);
  const absl::Time called = waiting_since_.value_or(now);
  waiting_since_.reset();
  return called;
}

void InputAccount::WaitCutShort(absl::Time called) {
  absl::MutexLock lock(&mu_);
  waiting_since_ = called;
}

std::optional<v1::ConsumeRequest> InputAccount::Account(absl::Time called,
                                                        absl::Time now,
                                                        bool can_report) {
  absl::MutexLock lock(&mu_);
  const absl::Duration wait = now - called;
  const absl::Duration step =
      last_return_ ? called - *last_return_ : absl::ZeroDuration();
  last_return_ = now;
  ++batches_;
  wait_ += wait;
  step_ += step;
  recent_.push_back({now, wait, step});
  recent_wait_ += wait;
  recent_step_ += step;
  while (now - recent_.front().at > kRecentWindow) {
    recent_wait_ -= recent_.front().wait;
    recent_step_ -= recent_.front().step;
    recent_.pop_front();
  }
  if (now - last_report_ < kReportEvery || !can_report) return std::nullopt;
  last_report_ = now;
  return Report();
}

v1::ConsumeRequest InputAccount::Report() const {
  v1::ConsumeRequest request;
  v1::Report* report = request.mutable_report();
  report->set_batches(batches_);
  report->set_wait_us(Micros(wait_));
  report->set_step_us(Micros(step_));
  report->set_recent_wait_us(Micros(recent_wait_));
  report->set_recent_step_us(Micros(recent_step_));
  return request;
}

InputStats InputAccount::stats() const {
  absl::MutexLock lock(&mu_);
  return {batches_, absl::ToDoubleSeconds(wait_), absl::ToDoubleSeconds(step_),
          Percent(wait_, step_), Percent(recent_wait_, recent_step_)};
}

}  // namespace stoker::internal
