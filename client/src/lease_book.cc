#include "client/src/lease_book.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/batch_wire.h"

namespace stoker::internal {

LeaseBook::LeaseBook(std::unique_ptr<LeaseTable> table, std::string job_id,
                     uint64_t batches_per_epoch,
                     std::shared_ptr<PositionTracker> tracker,
                     const ConsumeStream* stream)
    : table_(std::move(table)),
      job_id_(std::move(job_id)),
      batches_per_epoch_(batches_per_epoch),
      tracker_(std::move(tracker)),
      stream_(stream) {}

absl::Status LeaseBook::Ended() const {
  return table_ != nullptr ? table_->Ended() : absl::OkStatus();
}

bool LeaseBook::Forget(uint32_t slot, uint64_t generation) {
  absl::MutexLock lock(&mu_);
  auto it = out_.find(slot);
  if (it == out_.end() || it->second.first != generation) return false;
  out_.erase(it);
  return true;
}

absl::Status LeaseBook::Confirm(uint32_t slot, uint64_t generation,
                                uint64_t epoch, uint64_t batch) {
  if (table_ == nullptr) return absl::OkStatus();
  const bool claimed = table_->Claim(slot, generation);
  // Confirmed, or told it is void: either way the trainer knows.
  Forget(slot, generation);
  if (!claimed) return VoidReason(epoch, batch);
  // Consumed: the resume position moves past it now.
  tracker_->Released(BatchSequence(epoch, batch, batches_per_epoch_));
  return absl::OkStatus();
}

bool LeaseBook::Return(uint32_t slot, uint64_t generation, uint64_t epoch,
                       uint64_t batch) {
  const bool handed_out = Forget(slot, generation);
  if (table_ == nullptr || table_->Claim(slot, generation)) return true;
  if (handed_out) {
    absl::Status why = VoidReason(epoch, batch);
    absl::MutexLock lock(&mu_);
    if (unreported_.ok()) unreported_ = std::move(why);
  }
  return false;
}

bool LeaseBook::Live(uint32_t slot, uint64_t generation) const {
  return table_ == nullptr || table_->Live(slot, generation);
}

absl::Status LeaseBook::VoidReason(uint64_t epoch, uint64_t batch) const {
  absl::Status why = Ended();
  if (why.ok()) {
    absl::MutexLock lock(&mu_);
    why = abandoned_;
  }
  if (why.ok()) why = stream_->final_status();
  if (why.ok()) why = absl::DataLossError("the daemon took the lease back");
  return absl::Status(
      why.code(), absl::StrCat("batch ", epoch, ":", batch, " of job ", job_id_,
                               " may not be used, its lease was taken back: ",
                               why.message()));
}

void LeaseBook::HandedOut(uint32_t slot, uint64_t generation, uint64_t seq) {
  absl::MutexLock lock(&mu_);
  out_[slot] = {generation, seq};
}

absl::Status LeaseBook::Abandon(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (abandoned_.ok()) abandoned_ = why;
  }
  if (table_ != nullptr) table_->RevokeUnclaimed();
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!unreported_.ok()) return std::exchange(unreported_, absl::OkStatus());
    if (table_ == nullptr || out_.empty()) return absl::OkStatus();
    seq = out_.begin()->second.second;
  }
  const BatchPlace place =
      PlaceOf(seq, std::max<uint64_t>(batches_per_epoch_, 1));
  return VoidReason(place.epoch, place.batch);
}

absl::Status LeaseBook::TakeUnreported() {
  absl::MutexLock lock(&mu_);
  return std::exchange(unreported_, absl::OkStatus());
}

}  // namespace stoker::internal
