#include "daemon/jobs/stream_feed.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "daemon/jobs/epoch_order.h"
#include "daemon/jobs/job_datasets.h"  // StreamRoom
#include "daemon/spec/job_spec.h"      // kDefaultShuffleWindow

namespace stoker {
namespace {

// A window the user's share of the cache has no room for yet: each fetch
// waits StreamedShards::kRoomWait for the user's entries to go, this many
// times (a minute in all), an orphaned job of the user's ended before each.
constexpr int kRoomRounds = 30;

}  // namespace

StreamFeed::StreamFeed(std::shared_ptr<const StreamedShards> shards,
                       const JobConfig& config, FetchThreads* threads,
                       std::function<void()> on_ready,
                       std::function<bool()> make_room)
    : shards_(std::move(shards)),
      sharding_(config.sharding),
      seed_(config.seed),
      shuffle_(config.shuffle),
      window_(config.shuffle_window == 0 ? kDefaultShuffleWindow
                                         : config.shuffle_window),
      room_(StreamRoom(config, shards_->table())),
      last_epoch_(config.epochs == 0 ? UINT64_MAX : config.epochs - 1),
      threads_(threads),
      on_ready_(std::move(on_ready)),
      make_room_(std::move(make_room)) {
  {
    // The job starts here (a resumed one mid-epoch).
    absl::MutexLock lock(&mu_);
    const uint64_t start = config.start_batch * config.batch_size;
    oldest_ = {config.start_epoch, OrderOf(config.start_epoch).WindowOf(start)};
  }
  const ShardTable& table = shards_->table();
  first_sample_.reserve(table.shards());
  shard_of_identity_.reserve(table.shards());
  uint64_t next = 0;
  for (uint32_t s = 0; s < table.shards(); ++s) {
    first_sample_.push_back(next);
    next += table.samples(s);
    shard_of_identity_.emplace(std::hash<std::string>{}(shards_->Identity(s)),
                               s);
  }
  if (shards_->cache() != nullptr) shards_->cache()->AddFutureUse(this);
}

StreamFeed::~StreamFeed() { Stop(); }

DatasetSummary StreamFeed::Summary() const {
  const ShardTable& table = shards_->table();
  return {.kind = DatasetKind::kTarShards,
          .samples = table.samples(),
          .shards = table.shards(),
          .index_bytes = table.MemoryBytes() + 8 * first_sample_.capacity() +
                         (sizeof(std::pair<size_t, uint32_t>) + 1) *
                             shard_of_identity_.capacity()};
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
    std::vector<uint64_t>& first = first_use_[epoch];
    first.assign(shards_->table().shards(), UINT64_MAX);
    uint64_t at = 0;
    for (const ShardRun& run : it->second->runs()) {
      first[run.shard] = std::min(first[run.shard], at);
      at += run.count;
    }
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

void StreamFeed::Want(WindowKey key, bool needed) {
  if (stopped_ || slots_.contains(key)) return;
  // A window a row waits for is always fetched (a batch may span several
  // small windows); one ahead only while fewer than two are held.
  if (!needed && slots_.size() >= 2) return;
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
    const auto stopped = [self] {
      absl::MutexLock lock(&self->mu_);
      return self->stopped_;
    };
    absl::Time began = absl::Now();
    auto window = self->shards_->Fetch(shards, stopped);
    // No room in the cache is a passing state (the tasks of the window
    // before still running, another job's windows going): try again for a
    // while before failing.
    for (int round = 1; round < kRoomRounds && !stopped() &&
                        absl::IsResourceExhausted(window.status());
         ++round) {
      // Past the user's share (the cache waited for it): one of the user's
      // orphans goes. Past the whole cache or the disk, the cache answered
      // at once: wait here as long.
      if (self->make_room_ && absl::StrContains(window.status().message(),
                                                "--cache_size_per_user")) {
        self->make_room_();
      }
      while (!stopped() && absl::Now() - began < StreamedShards::kRoomWait) {
        absl::SleepFor(absl::Milliseconds(100));
      }
      began = absl::Now();
      window = self->shards_->Fetch(shards, stopped);
    }
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
  // The next epoch's order too: the cache weighs its shards' next uses.
  if (epoch < last_epoch_) OrderOf(epoch + 1);
  const StreamOrder& order = OrderOf(epoch);
  const WindowKey key{epoch, order.WindowOf(position)};
  Want(key, /*needed=*/true);
  if (auto next = After(key)) Want(*next, /*needed=*/false);
  auto it = slots_.find(key);
  if (it == slots_.end() || !it->second.done) return State::kWaiting;
  const Slot& slot = it->second;
  if (!slot.error.ok()) {
    *error = slot.error;
    return State::kFailed;
  }
  const StreamSample s = slot.order[position - order.window_start(key.second)];
  place->index = slot.window->index;
  place->sample = slot.window->SampleOf(s.shard, s.member);
  place->draw_id = first_sample_[s.shard] + s.member;
  return State::kReady;
}

void StreamFeed::Advance(uint64_t epoch, uint64_t position) {
  std::map<WindowKey, Slot> passed;  // let go after the lock
  absl::MutexLock lock(&mu_);
  oldest_ = {epoch, OrderOf(epoch).WindowOf(position)};
  auto end = slots_.lower_bound(oldest_);
  passed.insert(std::make_move_iterator(slots_.begin()),
                std::make_move_iterator(end));
  slots_.erase(slots_.begin(), end);
  orders_.erase(orders_.begin(), orders_.lower_bound(epoch));
  first_use_.erase(first_use_.begin(), first_use_.lower_bound(epoch));
}

void StreamFeed::Stop() {
  if (shards_->cache() != nullptr) shards_->cache()->RemoveFutureUse(this);
  std::map<WindowKey, Slot> held;  // let go after the lock
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  held.swap(slots_);
  orders_.clear();
  first_use_.clear();
}

uint64_t StreamFeed::NextUse(const std::string& identity) const {
  const auto found =
      shard_of_identity_.find(std::hash<std::string>{}(identity));
  if (found == shard_of_identity_.end()) return UINT64_MAX;
  const uint32_t shard = found->second;
  absl::MutexLock lock(&mu_);
  const auto now = orders_.find(oldest_.first);
  if (stopped_ || now == orders_.end()) return UINT64_MAX;
  const uint64_t at = now->second->window_start(
      std::min(oldest_.second, now->second->windows()));
  const auto first = first_use_.find(oldest_.first);
  if (first->second[shard] != UINT64_MAX && first->second[shard] >= at) {
    return first->second[shard] - at;
  }
  const auto next = first_use_.find(oldest_.first + 1);
  if (next == first_use_.end() || next->second[shard] == UINT64_MAX) {
    return UINT64_MAX;
  }
  return now->second->size() - at + next->second[shard];
}

}  // namespace stoker
