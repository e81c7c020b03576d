#include "daemon/job.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/batch_wire.h"
#include "common/check.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/job_spec.h"

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
  STOKER_ASSIGN_OR_RETURN(
      auto ring, Ring::Create(std::move(segment_name), RingGeometryFor(config),
                              segment_mode));
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
      start_seq_(BatchSequence(config_.start_epoch, config_.start_batch,
                               plan_.batches_per_epoch())),
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
  // The first distinct failures are logged (one line each); the rest are
  // only counted, so that a broken dataset cannot flood the journal.
  bool log = false;
  bool last = false;
  {
    absl::MutexLock lock(&mu_);
    ++decode_errors_;
    if (errors_.size() < kMaxErrorRecords &&
        error_samples_.insert(sample).second) {
      errors_.push_back({dataset_.samples[sample].path, reason});
      log = true;
      last = errors_.size() == kMaxErrorRecords;
    }
  }
  if (log) {
    spdlog::warn("job {}: {}: {}", id_, dataset_.samples[sample].path, reason);
  }
  if (last) {
    spdlog::warn("job {}: {} files failed; further failures are counted "
                 "(stokerctl jobs), not logged",
                 id_, kMaxErrorRecords);
  }
}

void Job::FinishTask(const SampleTask& task, const absl::Status& status) {
  std::vector<std::shared_ptr<JobListener>> notify;
  {
    absl::MutexLock lock(&mu_);
    --inflight_tasks_;
    if (phase_ != JobPhase::kRunning) {
      MaybeFreeRing();
      return;
    }
    if (!status.ok()) {
      spdlog::error("job {}: failed: {}", id_, status.message());
      Stop(JobPhase::kFailed, status);
      notify = Listeners();
    } else {
      ++samples_decoded_;
      for (auto it = filling_.begin(); it != filling_.end(); ++it) {
        if (it->seq != task.seq) continue;
        if (++it->done_rows == it->count) {
          ring_->Publish(it->slot);
          published_.emplace(it->seq, Published{it->slot});
          if (!broadcast()) ready_.insert(it->seq);
          filling_.erase(it);
          notify = Listeners();
        }
        break;
      }
    }
  }
  for (const auto& listener : notify) listener->OnDeliverable();
}

Demand Job::demand() const {
  absl::MutexLock lock(&mu_);
  if (phase_ != JobPhase::kRunning || ring_ == nullptr) return Demand::kNone;
  bool room = false;
  for (const Filling& f : filling_) room = room || f.next_row < f.count;
  room = room || (next_fill_seq_ < total_batches_ && ring_->FindFree());
  if (!room) return Demand::kNone;
  for (const auto& [key, c] : consumers_) {
    if (c.evicted.ok() && c.credits > 0 && !Deliverable(c)) {
      return Demand::kWaiting;
    }
  }
  return Demand::kPrefetch;
}

std::vector<std::shared_ptr<JobListener>> Job::Listeners() const {
  std::vector<std::shared_ptr<JobListener>> listeners;
  for (const auto& [key, c] : consumers_) listeners.push_back(c.listener);
  return listeners;
}

uint64_t Job::Leader() const {
  uint64_t leader = 0;
  for (const auto& [key, c] : consumers_) {
    if (c.evicted.ok()) leader = std::max(leader, c.next_seq);
  }
  return leader;
}

uint64_t Job::OldestHeld(const Consumer& c) const {
  uint64_t oldest = c.next_seq;
  for (const auto& [slot, seq] : c.leased) oldest = std::min(oldest, seq);
  return oldest;
}

uint64_t Job::BroadcastJoinPoint() const {
  // The oldest batch from which the ring (or the workers) still hold every
  // batch up to the newest: a joiner must not need a batch already freed.
  auto held = [&](uint64_t seq) {
    if (published_.count(seq) > 0) return true;
    for (const Filling& f : filling_) {
      if (f.seq == seq) return true;
    }
    return false;
  };
  uint64_t start = next_fill_seq_;
  while (start > start_seq_ && held(start - 1)) --start;
  const uint64_t leader = Leader();
  const uint32_t max_lag = config_.sharing.max_lag;
  if (leader > max_lag) start = std::max(start, leader - max_lag);
  return start;
}

absl::Status Job::Attach(std::shared_ptr<JobListener> listener,
                         const ConsumerIdentity& who, uint32_t credits,
                         uint64_t* start) {
  std::vector<std::shared_ptr<JobListener>> waiting;
  absl::Status status = AddConsumer(std::move(listener), who, credits, start,
                                     &waiting);
  for (const auto& l : waiting) l->OnDeliverable();
  return status;
}

absl::Status Job::AddConsumer(
    std::shared_ptr<JobListener> listener, const ConsumerIdentity& who,
    uint32_t credits, uint64_t* start,
    std::vector<std::shared_ptr<JobListener>>* barrier_opened) {
  absl::MutexLock lock(&mu_);
  if (phase_ == JobPhase::kFinished) {
    return absl::OutOfRangeError(absl::StrCat(
        "job ", id_, " has finished: every batch was delivered and released"));
  }
  if (phase_ != JobPhase::kRunning) return error_;
  if (config_.sharing.mode == SharingMode::kExclusive &&
      !consumers_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id_, " already has a consumer attached (its sharing mode is "
        "exclusive; create it with broadcast or partition to share it)"));
  }
  if (consumers_.size() >= kMaxConsumersPerJob) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "job ", id_, " already has ", consumers_.size(),
        " consumers, the most a job can have"));
  }
  Consumer c;
  c.listener = listener;
  c.who = who;
  c.id = next_consumer_id_++;
  c.credits = AddCapped(0, credits);
  if (broadcast()) {
    c.next_seq = BroadcastJoinPoint();
    *start = c.next_seq;
  } else {
    // The first batch nobody has released: requeued or leased ones come
    // before everything not yet sent.
    uint64_t first = next_send_seq_;
    if (!ready_.empty()) first = std::min(first, *ready_.begin());
    for (const auto& [key, other] : consumers_) {
      for (const auto& [slot, seq] : other.leased) first = std::min(first, seq);
    }
    *start = first;
  }
  consumers_.emplace(listener.get(), std::move(c));
  ++attached_ever_;
  if (broadcast() && attached_ever_ == config_.sharing.min_consumers) {
    // The barrier opens: everyone waiting may receive now.
    *barrier_opened = Listeners();
  }
  return absl::OkStatus();
}

void Job::Detach(const JobListener* listener) {
  std::vector<std::shared_ptr<JobListener>> notify;
  {
    absl::MutexLock lock(&mu_);
    auto it = consumers_.find(listener);
    if (it == consumers_.end()) return;
    std::map<uint32_t, uint64_t> leased = std::move(it->second.leased);
    consumers_.erase(it);
    if (ring_ == nullptr || phase_ != JobPhase::kRunning) return;
    if (broadcast()) {
      // The others no longer wait for it.
      FreeBroadcast();
    } else {
      // What it held goes back, in order, to the next consumer.
      for (const auto& [slot, seq] : leased) ready_.insert(seq);
      if (!leased.empty()) notify = Listeners();
    }
  }
  for (const auto& l : notify) l->OnDeliverable();
  on_work_();
}

void Job::ExpireLeases(absl::Time now, absl::Duration limit) {
  std::vector<std::shared_ptr<JobListener>> notify;
  {
    absl::MutexLock lock(&mu_);
    if (ring_ == nullptr || phase_ != JobPhase::kRunning) return;
    std::vector<std::shared_ptr<JobListener>> evicted;
    for (auto& [key, c] : consumers_) {
      if (!c.evicted.ok() || c.leased_at.empty()) continue;
      auto oldest = std::min_element(
          c.leased_at.begin(), c.leased_at.end(),
          [](const auto& a, const auto& b) { return a.second < b.second; });
      if (now - oldest->second <= limit) continue;
      const uint64_t seq = c.leased.at(oldest->first);
      const absl::Status why = absl::DeadlineExceededError(absl::StrCat(
          "consumer ", c.id, c.who.name.empty() ? "" : " '", c.who.name,
          c.who.name.empty() ? "" : "'", " of job ", id_, " held batch ",
          seq / plan_.batches_per_epoch(), ":", seq % plan_.batches_per_epoch(),
          " (slot ", oldest->first, ") for ",
          absl::FormatDuration(absl::Trunc(now - oldest->second,
                                           absl::Milliseconds(100))),
          ", more than the lease limit of ", absl::FormatDuration(limit),
          " (--lease_timeout); its batches go to the next consumer"));
      if (!broadcast()) {
        for (const auto& [slot, s] : c.leased) ready_.insert(s);
      }
      Evict(c, why, &evicted);
    }
    if (evicted.empty()) return;
    if (broadcast()) FreeBroadcast();
    notify = Listeners();
  }
  for (const auto& l : notify) l->OnDeliverable();
  on_work_();
}

void Job::AddCredit(const JobListener* listener, uint32_t credits) {
  absl::MutexLock lock(&mu_);
  auto it = consumers_.find(listener);
  if (it != consumers_.end()) {
    it->second.credits = AddCapped(it->second.credits, credits);
  }
}

void Job::Report(const JobListener* listener, const ConsumerReport& report) {
  absl::MutexLock lock(&mu_);
  auto it = consumers_.find(listener);
  if (it != consumers_.end()) {
    it->second.reported = true;
    it->second.report = report;
  }
}

std::optional<uint64_t> Job::Deliverable(const Consumer& c) const {
  if (broadcast()) {
    // The start barrier: nothing goes out before min_consumers attached, so
    // that all of them start together at the first batch.
    if (attached_ever_ < config_.sharing.min_consumers ||
        published_.count(c.next_seq) == 0) {
      return std::nullopt;
    }
    return c.next_seq;
  }
  if (ready_.empty() || *ready_.begin() > next_send_seq_) return std::nullopt;
  return *ready_.begin();
}

Delivery Job::NextDelivery(const JobListener* listener, Delivered* out,
                           absl::Status* ended) {
  std::vector<std::shared_ptr<JobListener>> evicted;
  Delivery result = Delivery::kNothing;
  bool freed = false;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t completed_before = completed_;
    if (phase_ == JobPhase::kFailed || phase_ == JobPhase::kDeleted) {
      *ended = error_;
      return Delivery::kEnded;
    }
    auto it = consumers_.find(listener);
    if (it == consumers_.end()) return Delivery::kNothing;
    Consumer& c = it->second;
    if (!c.evicted.ok()) {
      *ended = c.evicted;
      return Delivery::kEnded;
    }
    if (phase_ == JobPhase::kFinished) return Delivery::kEndOfJob;
    switch (config_.sharing.mode) {
      case SharingMode::kExclusive:
        if (next_send_seq_ == total_batches_ && ready_.empty()) {
          return Delivery::kEndOfJob;
        }
        break;
      case SharingMode::kBroadcast:
        if (c.next_seq >= total_batches_) return Delivery::kEndOfJob;
        break;
      case SharingMode::kPartition:
        break;  // until the job finishes, a batch may come back
    }
    const std::optional<uint64_t> seq = Deliverable(c);
    if (c.credits > 0 && seq) {
      Lease(c, *seq, out);
      result = Delivery::kBatch;
      if (broadcast()) evicted = EnforceLag();
    } else if (c.credits > 0 && broadcast()) {
      evicted = RelievePinnedRing(c);
    }
    freed = completed_ != completed_before;
  }
  // Evicted consumers learn why; skipped or evicted batches free slots.
  for (const auto& l : evicted) l->OnDeliverable();
  if (freed) on_work_();
  return result;
}

absl::Status Job::LagError(const Consumer& c, uint64_t lag,
                           absl::string_view why) const {
  return absl::ResourceExhaustedError(absl::StrCat(
      "consumer ", c.id, c.who.name.empty() ? "" : " '", c.who.name,
      c.who.name.empty() ? "" : "'", " of broadcast job ", id_, " fell ", lag,
      " batches behind the most advanced consumer (max_lag ",
      config_.sharing.max_lag, ", ", c.leased.size(),
      " batches held unreleased)", why,
      "; detached so that the others keep going (on_lag=",
      config_.sharing.on_lag == OnLagPolicy::kSkip ? "SKIP" : "DETACH", ")"));
}

void Job::Evict(Consumer& c, absl::Status why,
                std::vector<std::shared_ptr<JobListener>>* evicted) {
  // Logged once, by the stream it ends.
  c.evicted = std::move(why);
  c.leased.clear();
  c.leased_at.clear();
  c.credits = 0;
  evicted->push_back(c.listener);
}

void Job::Lease(Consumer& c, uint64_t seq, Delivered* out) {
  const uint32_t slot = published_.at(seq).slot;
  if (broadcast()) {
    ++c.next_seq;
  } else {
    ready_.erase(seq);
    if (seq == next_send_seq_) ++next_send_seq_;
  }
  c.leased.emplace(slot, seq);
  c.leased_at[slot] = absl::Now();
  --c.credits;
  ++c.delivered;
  ++batches_delivered_;
  out->slot = slot;
  out->generation = ring_->generation(slot);
  out->epoch = seq / plan_.batches_per_epoch();
  out->batch = seq % plan_.batches_per_epoch();
  out->sample_count = plan_.BatchSize(out->batch);
  images_delivered_ += out->sample_count;
}

std::vector<std::shared_ptr<JobListener>> Job::EnforceLag() {
  std::vector<std::shared_ptr<JobListener>> evicted;
  const uint64_t leader = Leader();
  const uint32_t max_lag = config_.sharing.max_lag;
  for (auto& [key, c] : consumers_) {
    if (!c.evicted.ok() || c.next_seq + max_lag >= leader) continue;
    if (config_.sharing.on_lag == OnLagPolicy::kSkip) {
      c.skipped += leader - max_lag - c.next_seq;
      c.next_seq = leader - max_lag;
    } else {
      Evict(c, LagError(c, leader - c.next_seq, ""), &evicted);
    }
  }
  FreeBroadcast();
  return evicted;
}

std::vector<std::shared_ptr<JobListener>> Job::RelievePinnedRing(
    const Consumer& starving) {
  std::vector<std::shared_ptr<JobListener>> evicted;
  // Pinned: no slot to fill, so the batch `starving` waits for cannot be
  // decoded until someone lets go of an older one.
  if (ring_->FindFree() || !filling_.empty()) return evicted;
  Consumer* blocker = nullptr;
  for (auto& [key, c] : consumers_) {
    if (c.evicted.ok() &&
        (blocker == nullptr || OldestHeld(c) < OldestHeld(*blocker))) {
      blocker = &c;
    }
  }
  if (blocker == nullptr || blocker == &starving ||
      OldestHeld(*blocker) >= OldestHeld(starving)) {
    return evicted;  // it waits for itself, or for nobody in particular
  }
  if (config_.sharing.on_lag == OnLagPolicy::kSkip &&
      blocker->next_seq < starving.next_seq) {
    blocker->skipped += starving.next_seq - blocker->next_seq;
    blocker->next_seq = starving.next_seq;
  } else {
    Evict(*blocker,
          LagError(*blocker, Leader() - OldestHeld(*blocker),
                   ": the ring is full of batches it has not released"),
          &evicted);
  }
  FreeBroadcast();
  return evicted;
}

void Job::Complete(uint64_t seq) {
  auto it = published_.find(seq);
  ring_->Free(it->second.slot);
  published_.erase(it);
  ++completed_;
  if (start_seq_ + completed_ == total_batches_) {
    spdlog::info("job {}: finished: all {} batches released", id_,
                 total_batches_);
    phase_ = JobPhase::kFinished;
    MaybeFreeRing();
  }
}

void Job::FreeBroadcast() {
  // Until min_consumers have attached, every batch waits for them.
  if (attached_ever_ < config_.sharing.min_consumers) return;
  bool any_active = false;
  for (const auto& [key, c] : consumers_) any_active = any_active || c.evicted.ok();
  std::vector<uint64_t> done;
  for (const auto& [seq, p] : published_) {
    // With nobody attached, what nobody has seen waits for the next one.
    if (!any_active && p.releases == 0) continue;
    bool needed = false;
    for (const auto& [key, c] : consumers_) {
      if (!c.evicted.ok()) continue;
      needed = needed || c.next_seq <= seq || c.leased.count(p.slot) > 0;
    }
    if (!needed) done.push_back(seq);
  }
  for (uint64_t seq : done) {
    if (phase_ != JobPhase::kRunning) break;
    Complete(seq);
  }
}

absl::Status Job::Release(const JobListener* listener, uint32_t slot,
                          uint64_t generation) {
  std::vector<std::shared_ptr<JobListener>> notify;
  {
    absl::MutexLock lock(&mu_);
    // Releases racing the end of the job (deleted, failed, finished) or of
    // this consumer (evicted) have nothing left to free: they are not the
    // consumer's fault.
    if (ring_ == nullptr || phase_ != JobPhase::kRunning) {
      return absl::OkStatus();
    }
    auto it = consumers_.find(listener);
    if (it == consumers_.end() || !it->second.evicted.ok()) {
      return absl::OkStatus();
    }
    Consumer& c = it->second;
    if (slot >= ring_->slot_count()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "release.slot ", slot, " is out of range: the ring has ",
          ring_->slot_count(), " slots"));
    }
    const uint64_t current = ring_->generation(slot);
    if (generation != current) {
      return absl::FailedPreconditionError(absl::StrCat(
          "release of slot ", slot, " generation ", generation,
          " is stale: the slot is at generation ", current));
    }
    auto lease = c.leased.find(slot);
    if (lease == c.leased.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "release of slot ", slot, " generation ", generation,
          ": this consumer does not hold it (double release, or another "
          "consumer's slot?)"));
    }
    const uint64_t seq = lease->second;
    c.leased.erase(lease);
    c.leased_at.erase(slot);
    ++c.released;
    ++batches_released_;
    if (broadcast()) {
      ++published_.at(seq).releases;
      FreeBroadcast();
    } else {
      Complete(seq);
    }
    // Partition consumers learn of the end only now (until the last release
    // a batch may still come back to them).
    if (phase_ == JobPhase::kFinished) notify = Listeners();
  }
  for (const auto& l : notify) l->OnDeliverable();
  if (notify.empty()) on_work_();
  return absl::OkStatus();
}

void Job::SampleRates(absl::Time now) {
  absl::MutexLock lock(&mu_);
  decoded_rate_.Record(now, static_cast<double>(samples_decoded_));
  delivered_rate_.Record(now, static_cast<double>(images_delivered_));
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
  std::vector<std::shared_ptr<JobListener>> notify;
  {
    absl::MutexLock lock(&mu_);
    Stop(JobPhase::kDeleted, why);
    notify = Listeners();
  }
  for (const auto& l : notify) l->OnDeliverable();
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
  c.decoded_per_second = decoded_rate_.PerSecond();
  c.delivered_per_second = delivered_rate_.PerSecond();
  c.worker_busy_ns = worker_busy_ns_.load();
  if (ring_ != nullptr) {
    c.filling_slots = ring_->CountInState(SlotState::kFilling);
    std::set<uint32_t> leased;
    for (const auto& [key, consumer] : consumers_) {
      for (const auto& [slot, seq] : consumer.leased) leased.insert(slot);
    }
    c.leased_slots = static_cast<uint32_t>(leased.size());
    c.ready_slots = static_cast<uint32_t>(published_.size()) - c.leased_slots;
  }
  const uint64_t leader = Leader();
  for (const auto& [key, consumer] : consumers_) {
    ConsumerCounters& out = c.consumers.emplace_back();
    out.id = consumer.id;
    out.name = consumer.who.name;
    out.client = consumer.who.client;
    out.delivered = consumer.delivered;
    out.released = consumer.released;
    out.skipped = consumer.skipped;
    out.leased = static_cast<uint32_t>(consumer.leased.size());
    out.lag = broadcast() && consumer.evicted.ok() && leader > consumer.next_seq
                  ? leader - consumer.next_seq
                  : 0;
    out.reported = consumer.reported;
    out.report = consumer.report;
  }
  std::sort(c.consumers.begin(), c.consumers.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return c;
}

}  // namespace stoker
