#include "daemon/jobs/job.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/batch_wire.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/jobs/make_delivery_policy.h"

namespace stoker {
namespace {

uint64_t NextSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// How long a broadcast consumer may stay behind before on_lag applies (see
// BroadcastPolicy).
constexpr absl::Duration kLagGrace = absl::Seconds(5);

}  // namespace

absl::StatusOr<std::shared_ptr<Job>> Job::Create(
    std::string id, JobConfig config,
    std::shared_ptr<const DatasetIndex> dataset, std::string segment_name,
    mode_t segment_mode, std::function<void()> on_work,
    std::shared_ptr<StreamFeed> stream) {
  const uint64_t samples = stream ? stream->samples() : dataset->size();
  const uint64_t per_rank = ShardSize(samples, config.sharding);
  const uint64_t per_epoch =
      BatchPlan(per_rank, config.batch_size, config.drop_last)
          .batches_per_epoch();
  if (per_epoch == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("an epoch would hold no batch: ", per_rank,
                     " samples per rank (dataset of ", samples, ", world_size ",
                     config.sharding.world_size, ") with batch_size ",
                     config.batch_size, " and drop_last"));
  }
  // Positions are numbered epoch * per_epoch + batch in 64 bits.
  constexpr uint64_t kMaxSeq = std::numeric_limits<uint64_t>::max();
  if (config.start_batch >= per_epoch) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_batch ", config.start_batch,
                     " is past an epoch of ", per_epoch, " batches"));
  }
  if (config.epochs > 0 && config.start_epoch >= config.epochs) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_epoch ", config.start_epoch, " is past the job's ",
                     config.epochs, " epochs"));
  }
  if (config.start_epoch >= kMaxSeq / per_epoch ||
      config.epochs >= kMaxSeq / per_epoch) {
    return absl::InvalidArgumentError(
        absl::StrCat("epochs ", config.epochs, " / start_epoch ",
                     config.start_epoch, " with ", per_epoch,
                     " batches per epoch overflow a 64-bit batch count"));
  }
  STOKER_ASSIGN_OR_RETURN(
      auto ring, Ring::Create(std::move(segment_name), RingGeometryFor(config),
                              segment_mode));
  return std::shared_ptr<Job>(new Job(std::move(id), std::move(config),
                                      std::move(dataset), std::move(stream),
                                      std::move(ring), std::move(on_work)));
}

Job::Job(std::string id, JobConfig config,
         std::shared_ptr<const DatasetIndex> index,
         std::shared_ptr<StreamFeed> stream, std::unique_ptr<Ring> ring,
         std::function<void()> on_work)
    : id_(std::move(id)),
      serial_(NextSerial()),
      config_(std::move(config)),
      dataset_(stream ? stream->Summary() : Summarize(*index)),
      plan_(ShardSize(dataset_.samples, config_.sharding), config_.batch_size,
            config_.drop_last),
      total_batches_(config_.epochs == 0
                         ? std::numeric_limits<uint64_t>::max()
                         : config_.epochs * plan_.batches_per_epoch()),
      start_seq_(BatchSequence(config_.start_epoch, config_.start_batch,
                               plan_.batches_per_epoch())),
      geometry_(ring->geometry()),
      segment_name_(ring->name()),
      on_work_(std::move(on_work)),
      stream_(std::move(stream)),
      ring_(std::move(ring)),
      index_(std::move(index)),
      policy_(
          MakeDeliveryPolicy({.job_id = id_,
                              .sharing = config_.sharing,
                              .slots = config_.slots,
                              .batches_per_epoch = plan_.batches_per_epoch(),
                              .start_seq = start_seq_,
                              .total_batches = total_batches_,
                              .lag_grace = kLagGrace})),
      // A resumed job starts where its predecessor's consumer stopped.
      next_fill_seq_(start_seq_) {}

void Job::FinishTask(const SampleTask& task, const absl::Status& status) {
  Wake wake;
  {
    absl::MutexLock lock(&mu_);
    --inflight_tasks_;
    if (state_ != JobState::kRunning) {
      MaybeFreeRing();
      return;
    }
    if (!status.ok()) {
      spdlog::error("job {}: failed: {}", id_, status.message());
      Stop(JobState::kFailed, status);
      wake.listeners = policy_->Listeners();
    } else {
      tally_.Decoded();
      auto it =
          std::find_if(filling_.begin(), filling_.end(),
                       [&](const Filling& f) { return f.seq == task.seq; });
      if (it != filling_.end() && ++it->done_rows == it->count) {
        ring_->Publish(it->slot);
        policy_->Published(it->seq, it->slot);
        filling_.erase(it);
        wake.listeners = policy_->Listeners();
      }
    }
  }
  Notify(wake);
}

absl::Status Job::Attach(std::shared_ptr<JobListener> listener,
                         const ConsumerIdentity& who, uint32_t credits,
                         uint64_t* start, std::shared_ptr<LeaseTable> leases) {
  Wake wake;
  {
    absl::MutexLock lock(&mu_);
    if (state_ == JobState::kFinished) {
      return absl::OutOfRangeError(absl::StrCat(
          "job ", id_,
          " has finished: every batch was delivered and released"));
    }
    if (state_ != JobState::kRunning) return error_;
    PolicyEffects effects;
    STOKER_ASSIGN_OR_RETURN(
        *start, policy_->Attach(std::move(listener), who, credits, &effects,
                                std::move(leases)));
    if (effects.wake_all) wake.listeners = policy_->Listeners();
  }
  Notify(wake);
  return absl::OkStatus();
}

void Job::Detach(const JobListener* listener, const absl::Status& why) {
  Wake wake;
  {
    absl::MutexLock lock(&mu_);
    PolicyEffects effects;
    if (!policy_->Detach(listener, &effects, why) || !running()) return;
    wake = Apply(effects);
  }
  wake.work = true;
  Notify(wake);
}

void Job::AddCredit(const JobListener* listener, uint32_t credits) {
  absl::MutexLock lock(&mu_);
  policy_->AddCredit(listener, credits);
}

void Job::Report(const JobListener* listener, const ConsumerReport& report) {
  absl::MutexLock lock(&mu_);
  policy_->Report(listener, report);
}

Delivery Job::NextDelivery(const JobListener* listener, Delivered* out,
                           absl::Status* ended) {
  Wake wake;
  Delivery result;
  {
    absl::MutexLock lock(&mu_);
    if (state_ == JobState::kFailed) {
      *ended = error_;
      return Delivery::kEnded;
    }
    Lease lease;
    PolicyEffects effects;
    result = policy_->Next(listener, state_ == JobState::kFinished, absl::Now(),
                           &lease, ended, &effects);
    if (result == Delivery::kBatch) {
      out->slot = lease.slot;
      out->generation = ring_->generation(lease.slot);
      out->epoch = lease.seq / plan_.batches_per_epoch();
      out->batch = lease.seq % plan_.batches_per_epoch();
      out->sample_count = plan_.BatchSize(out->batch);
      if (lease.table != nullptr)
        lease.table->Lease(out->slot, out->generation);
      tally_.Delivered(out->sample_count);
    }
    // Evicted consumers learn why; skipped or evicted batches free slots.
    wake = Apply(effects);
  }
  Notify(wake);
  return result;
}

absl::Status Job::Release(const JobListener* listener, uint32_t slot,
                          uint64_t generation) {
  Wake wake;
  {
    absl::MutexLock lock(&mu_);
    // Releases racing the end of the job (deleted, failed, finished) or of
    // this consumer (evicted) have nothing left to free: they are not the
    // consumer's fault.
    if (!running() || !policy_->IsActive(listener)) return absl::OkStatus();
    if (slot >= ring_->slot_count()) {
      return absl::InvalidArgumentError(
          absl::StrCat("release.slot ", slot, " is out of range: the ring has ",
                       ring_->slot_count(), " slots"));
    }
    const uint64_t current = ring_->generation(slot);
    if (generation != current) {
      return absl::FailedPreconditionError(
          absl::StrCat("release of slot ", slot, " generation ", generation,
                       " is stale: the slot is at generation ", current));
    }
    PolicyEffects effects;
    STOKER_RETURN_IF_ERROR(
        policy_->Release(listener, slot, generation, &effects));
    tally_.Released();
    wake = Apply(effects);
    // Partition consumers learn of the end only now (until the last release
    // a batch may still come back to them).
    const bool finished = state_ == JobState::kFinished;
    if (finished) wake.listeners = policy_->Listeners();
    wake.work = !finished;
  }
  Notify(wake);
  return absl::OkStatus();
}

Job::Wake Job::Apply(const PolicyEffects& effects) {
  Wake wake;
  wake.listeners = effects.wake_all ? policy_->Listeners() : effects.evicted;
  wake.work = !effects.freed.empty();
  for (uint32_t i = 0; i < effects.claimed; ++i) tally_.Released();
  for (uint32_t slot : effects.freed) {
    if (state_ != JobState::kRunning) break;
    ring_->Free(slot);
    if (start_seq_ + ++completed_ == total_batches_) {
      spdlog::info("job {}: finished: all {} batches released", id_,
                   total_batches_);
      state_ = JobState::kFinished;
      ended_at_ = absl::Now();
      MaybeFreeRing();
    }
  }
  return wake;
}

void Job::Notify(const Wake& wake) {
  for (const auto& listener : wake.listeners) listener->OnDeliverable();
  if (wake.work) on_work_();
}

void Job::SampleRates(absl::Time now) {
  absl::MutexLock lock(&mu_);
  tally_.SampleRates(now);
}

void Job::Stop(JobState state, const absl::Status& why) {
  if (state_ != JobState::kRunning) return;
  state_ = state;
  error_ = why;
  ended_at_ = absl::Now();
  filling_.clear();
  if (ring_ != nullptr) ring_->Unlink();
  MaybeFreeRing();
}

void Job::MaybeFreeRing() {
  if (state_ != JobState::kRunning && inflight_tasks_ == 0) {
    ring_.reset();
    index_.reset();
    if (stream_ != nullptr) stream_->Stop();  // its windows go
  }
}

}  // namespace stoker
