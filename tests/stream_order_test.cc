// StreamOrder on its own: every rank gets the same number of samples, the
// ranks together cover every sample once plus DistributedSampler's
// padding (the head of the epoch's sequence) or minus its cut tail, each
// rank reads a contiguous part of the shards, a window's samples come from
// its own runs only, and the order is a pure function of its inputs.
#include "daemon/jobs/stream_order.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "daemon/image/counter_random.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

std::shared_ptr<const std::vector<uint32_t>> Counts(size_t shards,
                                                    uint64_t seed) {
  auto counts = std::make_shared<std::vector<uint32_t>>();
  uint64_t k = 0;
  for (size_t s = 0; s < shards; ++s) {
    // Some shards empty, most of different sizes.
    counts->push_back(s % 11 == 5 ? 0 : uint32_t(UniformBelow(seed, &k, 40)));
  }
  return counts;
}

std::vector<StreamSample> All(const StreamOrder& order) {
  std::vector<StreamSample> all;
  for (uint32_t j = 0; j < order.windows(); ++j) {
    const auto window = order.Window(j);
    EXPECT_EQ(window.size(), order.window_start(j + 1) - order.window_start(j));
    all.insert(all.end(), window.begin(), window.end());
  }
  return all;
}

uint64_t Key(const StreamSample& s) {
  return uint64_t{s.shard} << 32 | s.member;
}

TEST(StreamOrder, RanksAreEqualAndCoverEverySampleWithThePadding) {
  const auto counts = Counts(37, 7);
  uint64_t total = 0;
  for (uint32_t c : *counts) total += c;
  for (uint32_t world : {1u, 2u, 3u, 4u, 8u, 5000u}) {
    for (bool drop_tail : {false, true}) {
      std::map<uint64_t, int> seen;
      const uint64_t per_rank =
          drop_tail ? total / world : (total + world - 1) / world;
      for (uint32_t rank = 0; rank < world; ++rank) {
        const StreamOrder order(counts, 3, 1, {rank, world, drop_tail}, 4,
                                true);
        ASSERT_EQ(order.size(), per_rank) << world << " " << rank;
        const auto all = All(order);
        ASSERT_EQ(all.size(), per_rank);
        for (const StreamSample& s : all) {
          ASSERT_LT(s.member, (*counts)[s.shard]);
          ++seen[Key(s)];
        }
      }
      // Every sample once; the padding repeats the head of the sequence.
      const uint64_t padded = per_rank * world;
      uint64_t twice = 0, missing = total - seen.size();
      std::set<uint64_t> repeated, head;
      for (const auto& [key, n] : seen) {
        twice += n - 1;
        if (n > 1) repeated.insert(key);
      }
      const StreamOrder epoch(counts, 3, 1, {0, 1, false}, 1, true);
      for (const ShardRun& run : epoch.runs()) {
        for (uint32_t m = 0; m < run.count; ++m) {
          if (head.size() < padded - std::min(padded, total)) {
            head.insert(Key({run.shard, run.first + m}));
          }
        }
      }
      if (drop_tail) {
        EXPECT_EQ(twice, 0u);
        EXPECT_EQ(missing, total - padded);
      } else if (padded < 2 * total) {
        EXPECT_EQ(missing, 0u);
        EXPECT_EQ(twice, padded - total) << world;
        EXPECT_EQ(repeated, head) << world;
      }
    }
  }
}

TEST(StreamOrder, TheSequenceIsThePermutedShardsAndRanksTakeBlocks) {
  const auto counts = Counts(23, 9);
  const StreamOrder whole(counts, 5, 2, {0, 1, false}, 1, false);
  // Without shuffle: the dataset's order, shard by shard.
  std::vector<StreamSample> expect;
  for (uint32_t s = 0; s < counts->size(); ++s) {
    for (uint32_t m = 0; m < (*counts)[s]; ++m) expect.push_back({s, m});
  }
  EXPECT_EQ(All(whole), expect);
  // With shuffle and window 1: each run's members stay together, and the
  // runs of rank 0, 1, 2 of 3 follow one another in one shard order.
  const StreamOrder one(counts, 5, 2, {0, 1, false}, 1, true);
  std::vector<ShardRun> joined;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    const StreamOrder part(counts, 5, 2, {rank, 3, true}, 1, true);
    for (const ShardRun& run : part.runs()) {
      if (!joined.empty() && joined.back().shard == run.shard) {
        joined.back().count += run.count;  // split at a block's edge
      } else {
        joined.push_back(run);
      }
    }
  }
  ASSERT_LE(joined.size(), one.runs().size());
  for (size_t r = 0; r < joined.size(); ++r) {
    EXPECT_EQ(joined[r].shard, one.runs()[r].shard) << r;
  }
  // A rank reads about 1 / world of the shards: the shards of 3 ranks
  // overlap only at their blocks' edges.
  size_t shards_read = 0;
  for (uint32_t rank = 0; rank < 3; ++rank) {
    shards_read +=
        StreamOrder(counts, 5, 2, {rank, 3, true}, 1, true).runs().size();
  }
  EXPECT_LE(shards_read, one.runs().size() + 2);
}

TEST(StreamOrder, AWindowHoldsItsOwnRunsOnlyAndIsShuffled) {
  const auto counts = Counts(64, 11);
  const StreamOrder order(counts, 1, 0, {1, 2, false}, 5, true);
  ASSERT_GT(order.windows(), 2u);
  for (uint32_t j = 0; j < order.windows(); ++j) {
    std::set<uint64_t> own;
    for (size_t r = order.first_run(j); r < order.first_run(j + 1); ++r) {
      const ShardRun& run = order.runs()[r];
      for (uint32_t m = 0; m < run.count; ++m) {
        own.insert(Key({run.shard, run.first + m}));
      }
    }
    const auto window = order.Window(j);
    std::set<uint64_t> got;
    for (const StreamSample& s : window) got.insert(Key(s));
    EXPECT_EQ(got, own) << j;
    EXPECT_EQ(got.size(), window.size());
    // Shuffled: not the runs' order.
    std::vector<StreamSample> in_order;
    for (uint64_t key : own) in_order.push_back({uint32_t(key >> 32), 0});
    bool moved = false;
    for (size_t i = 1; i < window.size(); ++i) {
      moved |= Key(window[i]) < Key(window[i - 1]);
    }
    EXPECT_TRUE(moved || window.size() < 3) << j;
  }
  // Position i is its window's sample i - window_start (as the feed reads
  // it).
  const auto all = All(order);
  for (uint64_t i = 0; i < order.size(); ++i) {
    const uint32_t j = order.WindowOf(i);
    ASSERT_EQ(order.Window(j)[i - order.window_start(j)], all[i]) << i;
  }
  EXPECT_EQ(order.WindowOf(order.size() - 1), order.windows() - 1);
}

TEST(StreamOrder, EachWindowHasItsOwnDraws) {
  auto tens = std::make_shared<std::vector<uint32_t>>(8, 10);
  const StreamOrder order(tens, 1, 0, {0, 1, false}, 1, true);
  std::set<std::vector<uint32_t>> patterns;
  for (uint32_t j = 0; j < order.windows(); ++j) {
    std::vector<uint32_t> members;
    for (const StreamSample& s : order.Window(j)) members.push_back(s.member);
    patterns.insert(members);
  }
  EXPECT_EQ(patterns.size(), 8u);
}

TEST(StreamOrder, IsAPureFunctionOfItsInputs) {
  const auto counts = Counts(50, 3);
  const auto order = [&](uint64_t seed, uint64_t epoch, uint32_t rank) {
    return All(StreamOrder(counts, seed, epoch, {rank, 4, false}, 3, true));
  };
  EXPECT_EQ(order(1, 2, 3), order(1, 2, 3));
  EXPECT_NE(order(1, 2, 3), order(1, 3, 3));
  EXPECT_NE(order(1, 2, 3), order(2, 2, 3));
  EXPECT_NE(order(1, 2, 3), order(1, 2, 2));
  // Every shard leads an epoch about as often (a fair shard permutation).
  std::map<uint32_t, int> first;
  for (uint64_t epoch = 0; epoch < 2000; ++epoch) {
    ++first
        [StreamOrder(counts, 1, epoch, {0, 1, false}, 1, true).runs()[0].shard];
  }
  for (const auto& [shard, n] : first) {
    EXPECT_EQ((*counts)[shard] > 0, true);
    EXPECT_LT(n, 2000 / 45 * 2.2) << shard;
  }
  EXPECT_GT(first.size(), 40u);  // of the 45 non-empty shards
}

TEST(StreamOrder, EmptyDatasetHasNoSamples) {
  auto none = std::make_shared<std::vector<uint32_t>>(5, 0);
  const StreamOrder order(none, 1, 0, {0, 2, false}, 4, true);
  EXPECT_EQ(order.size(), 0u);
  EXPECT_EQ(order.windows(), 0u);
}

}  // namespace
}  // namespace stoker
