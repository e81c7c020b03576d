// Epoch order and batch arithmetic: pure functions of the job's spec.
//
// The order of epoch e is a Fisher-Yates shuffle driven by a counter-based
// generator keyed by (seed, e), so it is the same on every run, every
// machine and every worker count, and any epoch can be recomputed without
// replaying the ones before it.
#ifndef STOKER_DAEMON_JOBS_EPOCH_ORDER_H_
#define STOKER_DAEMON_JOBS_EPOCH_ORDER_H_

#include <cstdint>
#include <vector>

#include "daemon/image/counter_random.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// The sample order of `epoch`: a permutation of [0, num_samples) when
// `shuffle`, else the identity.
std::vector<uint32_t> EpochPermutation(uint64_t seed, uint64_t epoch,
                                       uint32_t num_samples, bool shuffle);

// One rank's share of an epoch, exactly as torch.utils.data.
// DistributedSampler computes it from the same epoch order: every rank
// takes order[rank::world_size] of an order that is either padded by
// repeating its head until it divides evenly (drop_tail = false) or cut to
// the largest multiple of world_size (drop_tail = true). Shards of
// different ranks are disjoint except for the padding, and together cover
// the epoch. (Sharding is in spec/job_config.h.)

// With sharding.repetitions = k > 1 (repeated augmentation, as the
// classification reference's RASampler): the order with each sample
// repeated k times in a row, padded by repeating its head to a multiple of
// world_size, gives each rank positions rank::world_size, of which it takes
// as many as it would without repetition. RepeatCopy says which copy (0 to
// k - 1) position i of a rank's share is, so each copy gets its own draws.

// Samples per rank per epoch.
uint64_t ShardSize(uint64_t num_samples, const Sharding& sharding);

// This rank's samples of `order` (an epoch order of every sample).
std::vector<uint32_t> Shard(const std::vector<uint32_t>& order,
                            const Sharding& sharding);

// The copy that position `i` of this rank's share is (0 without
// repetition); `num_samples` is the epoch order's size.
uint32_t RepeatCopy(uint64_t i, uint64_t num_samples, const Sharding& sharding);

// How an epoch of `num_samples` splits into batches of `batch_size`.
class BatchPlan {
 public:
  BatchPlan(uint64_t num_samples, uint32_t batch_size, bool drop_last)
      : num_samples_(num_samples),
        batch_size_(batch_size),
        drop_last_(drop_last) {}

  uint64_t batches_per_epoch() const;
  // Samples in batch `batch` of an epoch (the last one may be short).
  uint32_t BatchSize(uint64_t batch) const;
  // Samples delivered per epoch.
  uint64_t samples_per_epoch() const;

 private:
  uint64_t num_samples_;
  uint32_t batch_size_;
  bool drop_last_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_EPOCH_ORDER_H_
