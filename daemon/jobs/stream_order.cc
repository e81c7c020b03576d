#include "daemon/jobs/stream_order.h"

#include <algorithm>
#include <numeric>

#include "daemon/image/counter_random.h"
#include "daemon/jobs/epoch_order.h"

namespace stoker {
namespace {

// Fisher-Yates over `items`, keyed as EpochPermutation keys its shuffle
// (plus `salt`, for a window's own draws).
template <typename T>
void Shuffle(uint64_t seed, uint64_t epoch, uint64_t salt,
             std::vector<T>* items) {
  const uint64_t key =
      Mix64(Mix64(Mix64(seed) ^ (epoch * 0xd1b54a32d192ed03ull)) ^ salt);
  uint64_t counter = 0;
  for (size_t i = items->size(); i > 1; --i) {
    const auto j = static_cast<size_t>(UniformBelow(key, &counter, i));
    std::swap((*items)[i - 1], (*items)[j]);
  }
}

}  // namespace

StreamOrder::StreamOrder(std::shared_ptr<const std::vector<uint32_t>> counts,
                         uint64_t seed, uint64_t epoch,
                         const Sharding& sharding, uint32_t window,
                         bool shuffle)
    : seed_(seed),
      epoch_(epoch),
      rank_(sharding.rank),
      window_(std::max(window, 1u)),
      shuffle_(shuffle) {
  const std::vector<uint32_t>& count = *counts;
  std::vector<uint32_t> shards(count.size());
  std::iota(shards.begin(), shards.end(), 0u);
  if (shuffle) Shuffle(seed, epoch, 0, &shards);
  // Where each shard of the permuted order starts in the epoch's sequence.
  std::vector<uint64_t> start(shards.size() + 1, 0);
  for (size_t k = 0; k < shards.size(); ++k) {
    start[k + 1] = start[k] + count[shards[k]];
  }
  const uint64_t total = start.back();
  size_ = ShardSize(total, sharding);
  // This rank's block of the padded sequence; padding wraps to its head.
  uint64_t at = total == 0 ? 0 : (uint64_t{sharding.rank} * size_) % total;
  uint64_t left = size_;
  size_t k = std::upper_bound(start.begin(), start.end(), at) - start.begin();
  k = k == 0 ? 0 : k - 1;
  while (left > 0) {
    if (k == shards.size()) k = 0, at = 0;  // the padding: the head again
    const uint64_t in_shard = at - start[k];
    const uint64_t take = std::min(left, start[k + 1] - at);
    if (take > 0) {
      runs_.push_back({shards[k], uint32_t(in_shard), uint32_t(take)});
    }
    left -= take;
    at += take;
    ++k;
  }
  window_start_.push_back(0);
  for (size_t r = 0; r < runs_.size(); r += window_) {
    uint64_t n = 0;
    for (size_t q = r; q < std::min(r + window_, runs_.size()); ++q) {
      n += runs_[q].count;
    }
    window_start_.push_back(window_start_.back() + n);
  }
}

uint32_t StreamOrder::WindowOf(uint64_t i) const {
  return uint32_t(
      std::upper_bound(window_start_.begin(), window_start_.end(), i) -
      window_start_.begin() - 1);
}

std::vector<StreamSample> StreamOrder::Window(uint32_t j) const {
  std::vector<StreamSample> samples;
  samples.reserve(window_start_[j + 1] - window_start_[j]);
  for (size_t r = first_run(j); r < first_run(j + 1); ++r) {
    for (uint32_t m = 0; m < runs_[r].count; ++m) {
      samples.push_back({runs_[r].shard, runs_[r].first + m});
    }
  }
  if (shuffle_) {
    Shuffle(seed_, epoch_, (uint64_t{rank_} << 32 | j) + 1, &samples);
  }
  return samples;
}

}  // namespace stoker
