#include "daemon/job.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status_macros.h"

namespace stoker {
namespace {

constexpr size_t kMaxErrorRecords = 64;
// Credit beyond this is meaningless (a ring has at most kMaxSlots slots) and
// is capped, so that no client can overflow the counter.
constexpr uint32_t kMaxCredits = 1 << 16;

uint32_t AddCapped(uint32_t credits, uint32_t more) {
  return credits + std::min(more, kMaxCredits - std::min(credits, kMaxCredits));
}

}  // namespace

absl::StatusOr<std::shared_ptr<Job>> Job::Create(
    std::string id, JobConfig config, Dataset dataset,
    std::string segment_name, mode_t segment_mode,
    std::function<void()> on_work) {
  const uint64_t per_rank = ShardSize(dataset.samples.size(), config.sharding);
  const uint64_t per_epoch =
      BatchPlan(per_rank, config.batch_size, config.drop_last)
          .batches_per_epoch();
  if (per_epoch == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an epoch would hold no batch: ", per_rank,
        " samples per rank (dataset of ", dataset.samples.size(),
        ", world_size ", config.sharding.world_size, ") with batch_size ",
        config.batch_size, " and drop_last"));
  }
  if (config.start_batch >= per_epoch) {
    return absl::OutOfRangeError(absl::StrCat(
        "start_batch ", config.start_batch, " is past an epoch of ", per_epoch,
        " batches"));
  }
  if (config.epochs > 0 && config.start_epoch >= config.epochs) {
    return absl::OutOfRangeError(absl::StrCat(
        "start_epoch ", config.start_epoch, " is past the job's ",
        config.epochs, " epochs"));
  }
  const RingGeometry geometry = ComputeRingGeometry(
      config.slots, ComputeSlotLayout(config.batch_size,
                                      config.pipeline.BytesPerImage()));
  STOKER_ASSIGN_OR_RETURN(
      auto ring, Ring::Create(std::move(segment_name), geometry, segment_mode));
  return std::shared_ptr<Job>(new Job(std::move(id), std::move(config),
                                      std::move(dataset), std::move(ring),
                                      std::move(on_work)));
}

Job::Job(std::string id, JobConfig config, Dataset dataset,
         std::unique_ptr<Ring> ring, std::function<void()> on_work)
    : id_(std::move(id)),
      config_(std::move(config)),
      dataset_(std::move(dataset)),
      plan_(ShardSize(dataset_.samples.size(), config_.sharding),
            config_.batch_size, config_.drop_last),
      total_batches_(config_.epochs == 0
                         ? std::numeric_limits<uint64_t>::max()
                         : config_.epochs * plan_.batches_per_epoch()),
      start_seq_(config_.start_epoch * plan_.batches_per_epoch() +
                 config_.start_batch),
      geometry_(ring->geometry()),
      segment_name_(ring->name()),
      on_work_(std::move(on_work)),
      ring_(std::move(ring)) {
  // A resumed job starts where its predecessor's consumer stopped.
  next_fill_seq_ = next_send_seq_ = start_seq_;
}

const std::vector<uint32_t>& Job::Order(uint64_t epoch) {
  auto it = orders_.find(epoch);
  if (it != orders_.end()) return it->second;
  // Keep the orders of epochs still being filled; drop older ones.
  uint64_t oldest = epoch;
  for (const Filling& f : filling_) {
    oldest = std::min(oldest, f.seq / plan_.batches_per_epoch());
  }
  orders_.erase(orders_.begin(), orders_.lower_bound(oldest));
  // Every rank draws the same order and takes its DistributedSampler share.
  return orders_
      .emplace(epoch,
               Shard(EpochPermutation(
                         config_.seed, epoch,
                         static_cast<uint32_t>(dataset_.samples.size()),
                         config_.shuffle),
                     config_.sharding))
      .first->second;
}

bool Job::StartBatch() {
  if (next_fill_seq_ >= total_batches_) return false;
  const std::optional<uint32_t> slot = ring_->FindFree();
  if (!slot) return false;
  const uint64_t seq = next_fill_seq_++;
  const uint64_t epoch = seq / plan_.batches_per_epoch();
  const uint64_t batch = seq % plan_.batches_per_epoch();
  const uint32_t count = plan_.BatchSize(batch);
  ring_->BeginFill(*slot, epoch, batch, count);
  filling_.push_back({seq, *slot, count, 0, 0});
  return true;
}

bool Job::TakeTask(SampleTask* task) {
  absl::MutexLock lock(&mu_);
  if (phase_ != JobPhase::kRunning) return false;
  Filling* open = nullptr;
  for (Filling& f : filling_) {
    if (f.next_row < f.count) {
      open = &f;
      break;
    }
  }
  if (open == nullptr) {
    if (!StartBatch()) return false;
    open = &filling_.back();
  }
  const uint64_t epoch = open->seq / plan_.batches_per_epoch();
  const uint64_t batch = open->seq % plan_.batches_per_epoch();
  const uint32_t row = open->next_row++;
  const SlotLayout& layout = geometry_.slot;
  uint8_t* data = ring_->SlotData(open->slot);
  task->seq = open->seq;
  task->epoch = epoch;
  task->slot = open->slot;
  task->row = row;
  task->sample = Order(epoch)[batch * config_.batch_size + row];
  task->image = data + layout.images_offset +
                uint64_t{row} * config_.pipeline.BytesPerImage();
  task->label = reinterpret_cast<int64_t*>(data + layout.labels_offset) + row;
  task->index = reinterpret_cast<int64_t*>(data + layout.indices_offset) + row;
  ++inflight_tasks_;
  return true;
}

void Job::RecordError(uint32_t sample, std::string reason) {
  absl::MutexLock lock(&mu_);
  ++decode_errors_;
  if (errors_.size() < kMaxErrorRecords &&
      error_samples_.insert(sample).second) {
    errors_.push_back({dataset_.samples[sample].path, std::move(reason)});
  }
}

void Job::FinishTask(const SampleTask& task, const absl::Status& status) {
  std::shared_ptr<JobListener> notify;
  {
    absl::MutexLock lock(&mu_);
    --inflight_tasks_;
    if (phase_ != JobPhase::kRunning) {
      MaybeFreeRing();
      return;
    }
    if (!status.ok()) {
      Stop(JobPhase::kFailed, status);
      notify = listener_;
    } else {
      ++samples_decoded_;
      for (auto it = filling_.begin(); it != filling_.end(); ++it) {
        if (it->seq != task.seq) continue;
        if (++it->done_rows == it->count) {
          ring_->Publish(it->slot);
          ready_.emplace(it->seq, it->slot);
          filling_.erase(it);
          notify = listener_;
        }
        break;
      }
    }
  }
  if (notify) notify->OnDeliverable();
}

absl::Status Job::Attach(std::shared_ptr<JobListener> listener,
                         uint32_t credits, uint64_t* first_unreleased) {
  absl::MutexLock lock(&mu_);
  if (phase_ == JobPhase::kFinished) {
    return absl::OutOfRangeError(absl::StrCat(
        "job ", id_, " has finished: every batch was delivered and released"));
  }
  if (phase_ != JobPhase::kRunning) return error_;
  if (listener_ != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id_, " already has a consumer attached"));
  }
  listener_ = std::move(listener);
  credits_ = AddCapped(0, credits);
  // Nothing is leased now (one consumer at a time); what its predecessor
  // held is back in ready_, in front of everything not yet sent.
  *first_unreleased =
      ready_.empty() ? next_send_seq_
                     : std::min(ready_.begin()->first, next_send_seq_);
  return absl::OkStatus();
}

void Job::Detach(const JobListener* listener) {
  absl::MutexLock lock(&mu_);
  if (listener_.get() != listener) return;
  listener_.reset();
  credits_ = 0;
  // What the consumer held goes back, in order, to the next one.
  for (const auto& [slot, seq] : leased_) {
    if (ring_ != nullptr) ring_->Unlease(slot);
    ready_.emplace(seq, slot);
  }
  leased_.clear();
}

void Job::AddCredit(uint32_t credits) {
  absl::MutexLock lock(&mu_);
  credits_ = AddCapped(credits_, credits);
}

Delivery Job::NextDelivery(Delivered* out, absl::Status* ended) {
  absl::MutexLock lock(&mu_);
  if (phase_ == JobPhase::kFailed || phase_ == JobPhase::kDeleted) {
    *ended = error_;
    return Delivery::kEnded;
  }
  if (next_send_seq_ == total_batches_ && ready_.empty()) {
    return Delivery::kEndOfJob;
  }
  if (credits_ == 0 || ready_.empty() ||
      ready_.begin()->first > next_send_seq_) {
    return Delivery::kNothing;
  }
  const auto [seq, slot] = *ready_.begin();
  ready_.erase(ready_.begin());
  if (seq == next_send_seq_) ++next_send_seq_;
  ring_->Lease(slot);
  leased_.emplace(slot, seq);
  --credits_;
  ++batches_delivered_;
  out->slot = slot;
  out->generation = ring_->generation(slot);
  out->epoch = seq / plan_.batches_per_epoch();
  out->batch = seq % plan_.batches_per_epoch();
  out->sample_count = plan_.BatchSize(out->batch);
  return Delivery::kBatch;
}

absl::Status Job::Release(uint32_t slot, uint64_t generation) {
  {
    absl::MutexLock lock(&mu_);
    // Releases racing the end of the job (deleted, failed, finished) have
    // nothing left to free: they are not the consumer's fault.
    if (ring_ == nullptr || phase_ != JobPhase::kRunning) {
      return absl::OkStatus();
    }
    STOKER_RETURN_IF_ERROR(ring_->Release(slot, generation));
    leased_.erase(slot);
    if (start_seq_ + ++batches_released_ == total_batches_) {
      phase_ = JobPhase::kFinished;
      MaybeFreeRing();
      return absl::OkStatus();
    }
  }
  on_work_();
  return absl::OkStatus();
}

void Job::Stop(JobPhase phase, const absl::Status& why) {
  if (phase_ != JobPhase::kRunning) return;
  phase_ = phase;
  error_ = why;
  filling_.clear();
  if (ring_ != nullptr) ring_->Unlink();
  MaybeFreeRing();
}

void Job::MaybeFreeRing() {
  if (phase_ != JobPhase::kRunning && inflight_tasks_ == 0) ring_.reset();
}

void Job::End(const absl::Status& why) {
  std::shared_ptr<JobListener> notify;
  {
    absl::MutexLock lock(&mu_);
    Stop(JobPhase::kDeleted, why);
    notify = listener_;
  }
  if (notify) notify->OnDeliverable();
}

JobPhase Job::phase() const {
  absl::MutexLock lock(&mu_);
  return phase_;
}

absl::Status Job::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

JobCounters Job::Counters() const {
  absl::MutexLock lock(&mu_);
  JobCounters c;
  c.phase = phase_;
  c.samples_decoded = samples_decoded_;
  c.batches_delivered = batches_delivered_;
  c.batches_released = batches_released_;
  c.decode_errors = decode_errors_;
  c.errors = errors_;
  if (ring_ != nullptr) {
    c.ready_slots = ring_->CountInState(SlotState::kReady);
    c.leased_slots = ring_->CountInState(SlotState::kLeased);
  }
  c.consumers = listener_ != nullptr ? 1 : 0;
  return c;
}

}  // namespace stoker
