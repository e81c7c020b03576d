// StreamOrder: the order in which one rank reads a streamed dataset (remote
// shards larger than the node's cache), a pure function of (the shards'
// sample counts, seed, epoch, rank, world size, window), so that every node
// computes its own share without a coordinator and a job resumes exactly.
//
// An epoch:
//  1. the shards are permuted, keyed by (seed, epoch) as EpochPermutation
//     permutes samples (identity without shuffle);
//  2. their samples, shard after shard in that order, make one sequence of
//     N samples; it is padded by repeating its head to a multiple of the
//     world size (or cut to one, drop_tail), as DistributedSampler pads,
//     so every rank gets ShardSize(N) samples;
//  3. rank r takes the r-th contiguous block of the padded sequence, not
//     every world_size-th sample: a rank then reads about 1/world_size of
//     the shards, not all of them;
//  4. its block, as runs of consecutive members of one shard, is cut into
//     windows of `window` runs, and each window's samples are shuffled
//     together, keyed by (seed, epoch, rank, window).
// A rank therefore holds at most a window of shards at a time, and the
// order departs from a global permutation: samples of one window come from
// `window` shards only (docs/remote.md measures what that costs).
//
// Thread-safety: immutable once made.
#ifndef STOKER_DAEMON_JOBS_STREAM_ORDER_H_
#define STOKER_DAEMON_JOBS_STREAM_ORDER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "daemon/spec/job_config.h"  // Sharding

namespace stoker {

// Consecutive members [first, first + count) of one shard.
struct ShardRun {
  uint32_t shard = 0;
  uint32_t first = 0;
  uint32_t count = 0;
  bool operator==(const ShardRun&) const = default;
};

// One sample of a shard: its shard and its member (sample) number there.
struct StreamSample {
  uint32_t shard = 0;
  uint32_t member = 0;
  bool operator==(const StreamSample&) const = default;
};

class StreamOrder {
 public:
  // `counts`: samples per shard, in dataset order (shared by the epochs'
  // orders). `window` >= 1: runs whose samples are shuffled together.
  StreamOrder(std::shared_ptr<const std::vector<uint32_t>> counts,
              uint64_t seed, uint64_t epoch, const Sharding& sharding,
              uint32_t window, bool shuffle);

  // This rank's samples in the epoch.
  uint64_t size() const { return size_; }
  // The shards it reads, in order, as runs (a shard split by the rank's
  // block edges or by the padding appears as a run of its part).
  const std::vector<ShardRun>& runs() const { return runs_; }
  uint32_t windows() const { return uint32_t(window_start_.size() - 1); }
  // The window holding position i (< size()), and window j's first
  // position and its runs [first_run(j), first_run(j + 1)).
  uint32_t WindowOf(uint64_t i) const;
  uint64_t window_start(uint32_t j) const { return window_start_[j]; }
  size_t first_run(uint32_t j) const {
    return std::min<size_t>(size_t{j} * window_, runs_.size());
  }
  // Window j's samples, in the order they are read (positions
  // window_start(j) on).
  std::vector<StreamSample> Window(uint32_t j) const;

 private:
  uint64_t seed_;
  uint64_t epoch_;
  uint32_t rank_;
  uint32_t window_;
  bool shuffle_;
  uint64_t size_ = 0;
  std::vector<ShardRun> runs_;
  std::vector<uint64_t> window_start_;  // windows() + 1 entries
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_STREAM_ORDER_H_
