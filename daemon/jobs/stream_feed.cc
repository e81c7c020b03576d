#include "daemon/jobs/stream_feed.h"

#include <algorithm>

#include "daemon/jobs/epoch_order.h"
#include "daemon/spec/job_spec.h"  // kDefaultShuffleWindow

namespace stoker {

StreamFeed::StreamFeed(std::shared_ptr<const StreamedShards> shards,
                       const JobConfig& config, FetchThreads* threads,
                       std::function<void()> on_ready)
    : shards_(std::move(shards)),
      sharding_(config.sharding),
      seed_(config.seed),
      shuffle_(config.shuffle),
      window_(config.shuffle_window == 0 ? kDefaultShuffleWindow
                                         : config.shuffle_window),
      last_epoch_(config.epochs == 0 ? UINT64_MAX : config.epochs - 1),
      threads_(threads),
      on_ready_(std::move(on_ready)) {
  {
    // The job starts here (a resumed one mid-epoch).
    absl::MutexLock lock(&mu_);
    const uint64_t start = config.start_batch * config.batch_size;
    oldest_ = {config.start_epoch, OrderOf(config.start_epoch).WindowOf(start)};
  }
  const ShardTable& table = shards_->table();
  first_sample_.reserve(table.shards());
  uint64_t next = 0;
  for (size_t s = 0; s < table.shards(); ++s) {
    first_sample_.push_back(next);
    next += table.samples(s);
  }
}

DatasetSummary StreamFeed::Summary() const {
  const ShardTable& table = shards_->table();
  return {.kind = DatasetKind::kTarShards,
          .samples = table.samples(),
          .shards = table.shards(),
          .index_bytes = table.MemoryBytes() + 8 * first_sample_.capacity()};
}

uint64_t StreamFeed::samples_per_rank() const {
  return ShardSize(samples(), sharding_);
}

const StreamOrder& StreamFeed::OrderOf(uint64_t epoch) {
  auto it = orders_.find(epoch);
  if (it == orders_.end()) {
    it = orders_
             .emplace(epoch, std::make_shared<StreamOrder>(
                                 shards_->table().counts(), seed_, epoch,
                                 sharding_, window_, shuffle_))
             .first;
  }
  return *it->second;
}

std::optional<StreamFeed::WindowKey> StreamFeed::After(WindowKey key) {
  if (key.second + 1 < OrderOf(key.first).windows()) {
    return WindowKey{key.first, key.second + 1};
  }
  if (key.first >= last_epoch_) return std::nullopt;
  return WindowKey{key.first + 1, 0};
}

void StreamFeed::Want(WindowKey key) {
  if (stopped_ || slots_.contains(key)) return;
  // Two windows at most: the oldest one in use and the next.
  if (key > oldest_ && key != After(oldest_)) return;
  const StreamOrder& order = OrderOf(key.first);
  if (key.second >= order.windows()) return;
  slots_.emplace(key, Slot{});
  std::vector<uint32_t> shards;
  for (size_t r = order.first_run(key.second);
       r < order.first_run(key.second + 1); ++r) {
    const uint32_t shard = order.runs()[r].shard;
    if (std::find(shards.begin(), shards.end(), shard) == shards.end()) {
      shards.push_back(shard);
    }
  }
  threads_->Post([self = shared_from_this(), key, order = orders_.at(key.first),
                  shards = std::move(shards)] {
    auto window = self->shards_->Fetch(shards, [self] {
      absl::MutexLock lock(&self->mu_);
      return self->stopped_;
    });
    self->Fetched(key, std::move(window), order->Window(key.second));
  });
}

void StreamFeed::Fetched(
    WindowKey key, absl::StatusOr<std::shared_ptr<const StreamWindow>> window,
    std::vector<StreamSample> order) {
  {
    absl::MutexLock lock(&mu_);
    auto it = slots_.find(key);
    if (stopped_ || it == slots_.end()) return;  // passed meanwhile
    Slot& slot = it->second;
    slot.done = true;
    if (window.ok()) {
      slot.window = *std::move(window);
      slot.order = std::move(order);
    } else {
      slot.error = window.status();
    }
  }
  on_ready_();
}

StreamFeed::State StreamFeed::Locate(uint64_t epoch, uint64_t position,
                                     StreamPlace* place, absl::Status* error) {
  absl::MutexLock lock(&mu_);
  const StreamOrder& order = OrderOf(epoch);
  const WindowKey key{epoch, order.WindowOf(position)};
  Want(key);
  if (auto next = After(key)) Want(*next);
  auto it = slots_.find(key);
  if (it == slots_.end() || !it->second.done) return State::kWaiting;
  const Slot& slot = it->second;
  if (!slot.error.ok()) {
    *error = slot.error;
    return State::kFailed;
  }
  const StreamSample s = slot.order[position - order.window_start(key.second)];
  place->index = slot.window->index.get();
  place->sample = slot.window->SampleOf(s.shard, s.member);
  place->draw_id = first_sample_[s.shard] + s.member;
  return State::kReady;
}

void StreamFeed::Advance(uint64_t epoch, uint64_t position) {
  absl::MutexLock lock(&mu_);
  oldest_ = {epoch, OrderOf(epoch).WindowOf(position)};
  slots_.erase(slots_.begin(), slots_.lower_bound(oldest_));
  orders_.erase(orders_.begin(), orders_.lower_bound(epoch));
}

void StreamFeed::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  slots_.clear();
  orders_.clear();
}

}  // namespace stoker
