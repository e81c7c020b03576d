// Job: the workers' side. Which sample each row of a batch is (the epoch
// order, or a streamed job's feed), handing rows out as tasks, and what
// the workers could do for the job now.
#include <algorithm>

#include "common/log.h"
#include "daemon/jobs/job.h"

namespace stoker {

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
               Shard(EpochPermutation(config_.seed, epoch,
                                      static_cast<uint32_t>(dataset_.samples),
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
  policy_->Started(seq);
  return true;
}

Job::Filling* Job::OpenBatch() {
  for (Filling& f : filling_) {
    if (f.next_row < f.count) return &f;
  }
  if (!StartBatch()) return nullptr;
  return &filling_.back();
}

std::pair<uint64_t, uint64_t> Job::PositionOf(uint64_t seq,
                                              uint32_t row) const {
  return {seq / plan_.batches_per_epoch(),
          seq % plan_.batches_per_epoch() * config_.batch_size + row};
}

bool Job::PlaceStreamed(const Filling& open, SampleTask* task, Wake* wake) {
  const auto [epoch, position] = PositionOf(open.seq, open.next_row);
  // Rows are handed out in order: the windows before this row's are done
  // with, but for the tasks in flight, which hold theirs.
  stream_->Advance(epoch, position);
  StreamPlace place;
  absl::Status error;
  switch (stream_->Locate(epoch, position, &place, &error)) {
    case StreamFeed::State::kReady:
      task->dataset = place.index.get();
      task->window = std::move(place.index);
      task->sample = place.sample;
      task->draw_id = place.draw_id;
      return true;
    case StreamFeed::State::kWaiting:
      return false;  // the feed calls on_work once it has the window
    case StreamFeed::State::kFailed:
      break;
  }
  spdlog::error("job {}: failed: {}", id_, error.message());
  Stop(JobState::kFailed, error);
  wake->listeners = policy_->Listeners();
  return false;
}

bool Job::TakeTask(SampleTask* task) {
  Wake wake;
  bool taken = false;
  {
    absl::MutexLock lock(&mu_);
    taken = FillTask(task, &wake);
  }
  if (!wake.listeners.empty()) Notify(wake);
  return taken;
}

bool Job::FillTask(SampleTask* task, Wake* wake) {
  if (state_ != JobState::kRunning) return false;
  Filling* open = OpenBatch();
  if (open == nullptr) return false;
  const auto [epoch, position] = PositionOf(open->seq, open->next_row);
  if (stream_ != nullptr) {
    if (!PlaceStreamed(*open, task, wake)) return false;
  } else {
    task->sample = Order(epoch)[position];
    task->draw_id = task->sample;
    task->dataset = index_.get();
  }
  const uint32_t row = open->next_row++;
  task->seq = open->seq;
  task->epoch = epoch;
  task->slot = open->slot;
  task->row = row;
  task->copy = RepeatCopy(position, dataset_.samples, config_.sharding);
  task->out = {ring_->SlotData(open->slot), &geometry_.slot, row};
  ++inflight_tasks_;
  return true;
}

void Job::RecordError(const DatasetIndex& index, uint32_t sample,
                      std::string reason) {
  // The first distinct failures are logged (one line each); the rest are
  // only counted, so that a broken dataset cannot flood the journal.
  JobTally::ErrorLog log;
  // Called with the sample's task in flight: its index is still held.
  const std::string path = index.Describe(sample);
  {
    absl::MutexLock lock(&mu_);
    log = tally_.RecordError(sample, path, reason);
  }
  if (log == JobTally::ErrorLog::kCountOnly) return;
  spdlog::warn("job {}: {}: {}", id_, path, reason);
  if (log == JobTally::ErrorLog::kLogLast) {
    spdlog::warn(
        "job {}: {} files failed; further failures are counted "
        "(stokerctl jobs), not logged",
        id_, JobTally::kMaxErrorRecords);
  }
}

Demand Job::demand() const {
  absl::MutexLock lock(&mu_);
  if (!running()) return Demand::kNone;
  const Filling* open = nullptr;
  for (const Filling& f : filling_) {
    if (f.next_row < f.count) {
      open = &f;
      break;
    }
  }
  if (open == nullptr &&
      !(next_fill_seq_ < total_batches_ && ring_->FindFree())) {
    return Demand::kNone;
  }
  if (stream_ != nullptr) {
    // Nothing to do until the window of the next row is fetched.
    const auto [epoch, position] = open != nullptr
                                       ? PositionOf(open->seq, open->next_row)
                                       : PositionOf(next_fill_seq_, 0);
    StreamPlace place;
    absl::Status error;
    if (stream_->Locate(epoch, position, &place, &error) ==
        StreamFeed::State::kWaiting) {
      return Demand::kNone;
    }
  }
  return policy_->Starving() ? Demand::kWaiting : Demand::kPrefetch;
}

}  // namespace stoker
