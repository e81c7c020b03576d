#include "daemon/jobs/epoch_order.h"

#include <algorithm>
#include <numeric>

namespace stoker {

std::vector<uint32_t> EpochPermutation(uint64_t seed, uint64_t epoch,
                                       uint32_t num_samples, bool shuffle) {
  std::vector<uint32_t> order(num_samples);
  std::iota(order.begin(), order.end(), 0u);
  if (!shuffle) return order;
  const uint64_t key = Mix64(Mix64(seed) ^ (epoch * 0xd1b54a32d192ed03ull));
  uint64_t counter = 0;
  for (uint32_t i = num_samples; i > 1; --i) {
    const auto j = static_cast<uint32_t>(UniformBelow(key, &counter, i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

uint64_t ShardSize(uint64_t n, const Sharding& s) {
  const uint64_t w = s.world_size;
  if (s.drop_tail && n % w != 0) return (n - w + w - 1) / w;  // ceil((n-w)/w)
  return (n + w - 1) / w;
}

namespace {

// The position in the repeated order of position i of this rank's share.
uint64_t RepeatedPosition(uint64_t i, uint64_t n, const Sharding& s) {
  // Padding repeats the head of the repeated order.
  return (s.rank + i * s.world_size) % (n * std::max(s.repetitions, 1u));
}

}  // namespace

uint32_t RepeatCopy(uint64_t i, uint64_t n, const Sharding& s) {
  if (s.repetitions <= 1 || n == 0) return 0;
  return static_cast<uint32_t>(RepeatedPosition(i, n, s) % s.repetitions);
}

std::vector<uint32_t> Shard(const std::vector<uint32_t>& order,
                            const Sharding& s) {
  if (s.world_size == 1 && s.repetitions <= 1) return order;
  // Position i of this rank's share is position rank + i * world_size of
  // the (repeated, then padded or cut) order; padding repeats its head, as
  // DistributedSampler and RASampler do.
  const uint64_t per_rank = ShardSize(order.size(), s);
  const uint32_t copies = s.repetitions <= 1 ? 1 : s.repetitions;
  std::vector<uint32_t> shard(per_rank);
  for (uint64_t i = 0; i < per_rank; ++i) {
    shard[i] = order[RepeatedPosition(i, order.size(), s) / copies];
  }
  return shard;
}

uint64_t BatchPlan::batches_per_epoch() const {
  if (drop_last_) return num_samples_ / batch_size_;
  return (num_samples_ + batch_size_ - 1) / batch_size_;
}

uint32_t BatchPlan::BatchSize(uint64_t batch) const {
  const uint64_t start = batch * batch_size_;
  if (start >= num_samples_) return 0;
  const uint64_t left = num_samples_ - start;
  return left < batch_size_ ? static_cast<uint32_t>(left) : batch_size_;
}

uint64_t BatchPlan::samples_per_epoch() const {
  return drop_last_ ? batches_per_epoch() * batch_size_ : num_samples_;
}

}  // namespace stoker
