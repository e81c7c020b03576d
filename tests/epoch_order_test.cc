#include "daemon/jobs/epoch_order.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace stoker {
namespace {

bool IsPermutation(const std::vector<uint32_t>& order) {
  std::vector<uint32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != i) return false;
  }
  return true;
}

TEST(EpochPermutation, IsAPermutationOfEverySample) {
  for (uint32_t n : {1u, 2u, 3u, 17u, 1000u}) {
    EXPECT_TRUE(IsPermutation(EpochPermutation(7, 0, n, true))) << n;
  }
  EXPECT_TRUE(EpochPermutation(7, 0, 0, true).empty());
}

TEST(EpochPermutation, SameSeedAndEpochGiveTheSameOrder) {
  EXPECT_EQ(EpochPermutation(42, 3, 500, true),
            EpochPermutation(42, 3, 500, true));
}

TEST(EpochPermutation, OrderChangesWithEpochAndSeed) {
  const auto base = EpochPermutation(42, 0, 500, true);
  EXPECT_NE(base, EpochPermutation(42, 1, 500, true));
  EXPECT_NE(base, EpochPermutation(43, 0, 500, true));
}

TEST(EpochPermutation, ReallyShuffles) {
  const auto order = EpochPermutation(1, 0, 1000, true);
  int fixed_points = 0;
  for (uint32_t i = 0; i < order.size(); ++i) fixed_points += order[i] == i;
  // A uniform permutation has one fixed point on average.
  EXPECT_LT(fixed_points, 10);
}

TEST(EpochPermutation, WithoutShuffleIsTheIdentity) {
  std::vector<uint32_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0u);
  EXPECT_EQ(EpochPermutation(9, 4, 50, false), identity);
}

TEST(UniformBelow, StaysInRangeAndCoversIt) {
  uint64_t k = 0;
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t v = UniformBelow(99, &k, 7);
    ASSERT_LT(v, 7u);
    ++seen[v];
  }
  for (int count : seen) EXPECT_GT(count, 800);
}

// DistributedSampler's arithmetic, written out from its source (torch 1.13):
// num_samples = ceil((n - w) / w) if drop_last and n % w else ceil(n / w);
// indices padded with their head (or cut) to num_samples * w; then
// indices[rank::w].
TEST(Shard, MatchesDistributedSamplerOnAKnownOrder) {
  const std::vector<uint32_t> order = {9, 3, 7, 0, 5, 1, 8, 2, 6, 4};  // n = 10
  // w = 3, padded: 12 = 10 + 2 (head 9, 3).
  EXPECT_EQ(Shard(order, {0, 3, false}), (std::vector<uint32_t>{9, 0, 8, 4}));
  EXPECT_EQ(Shard(order, {1, 3, false}), (std::vector<uint32_t>{3, 5, 2, 9}));
  EXPECT_EQ(Shard(order, {2, 3, false}), (std::vector<uint32_t>{7, 1, 6, 3}));
  // w = 3, drop: ceil(7 / 3) = 3 each, the first 9 of the order.
  EXPECT_EQ(Shard(order, {0, 3, true}), (std::vector<uint32_t>{9, 0, 8}));
  EXPECT_EQ(Shard(order, {2, 3, true}), (std::vector<uint32_t>{7, 1, 6}));
  // w = 4 on 10: padded to 12; w = 1: everything.
  EXPECT_EQ(ShardSize(10, {0, 4, false}), 3u);
  EXPECT_EQ(ShardSize(10, {0, 4, true}), 2u);
  EXPECT_EQ(Shard(order, {0, 1, false}), order);
}

TEST(Shard, RanksAreDisjointBesidesPaddingAndCoverTheEpoch) {
  for (uint32_t n : {1u, 7u, 10u, 11u, 64u}) {
    for (uint32_t w : {1u, 2u, 3u, 4u, 7u}) {
      for (bool drop : {false, true}) {
        if (drop && n < w) continue;
        const auto order = EpochPermutation(5, 2, n, true);
        std::vector<int> seen(n, 0);
        for (uint32_t r = 0; r < w; ++r) {
          const auto shard = Shard(order, {r, w, drop});
          ASSERT_EQ(shard.size(), ShardSize(n, {r, w, drop}));
          for (uint32_t i : shard) ++seen[i];
        }
        const uint64_t total = ShardSize(n, {0, w, drop}) * w;
        int covered = 0, repeated = 0;
        for (int count : seen) {
          covered += count > 0;
          repeated += count > 1 ? count - 1 : 0;
        }
        if (drop) {
          EXPECT_EQ(covered, int(total)) << n << " " << w;  // the cut tail only
          EXPECT_EQ(repeated, 0);
        } else {
          EXPECT_EQ(covered, int(n)) << n << " " << w;  // the whole epoch
          EXPECT_EQ(repeated, int(total - n)) << "only the padding repeats";
        }
      }
    }
  }
}

// The classification reference's RASampler, transcribed: each sample k times
// in a row, padded with the head to num_samples * world, positions
// rank::world; stoker keeps the unrepeated epoch length (the reference cuts
// it to a multiple of 256 of the dataset).
std::vector<std::pair<uint32_t, uint32_t>> RaSampler(
    const std::vector<uint32_t>& order, uint32_t reps, uint32_t rank,
    uint32_t world, uint64_t length) {
  std::vector<std::pair<uint32_t, uint32_t>> repeated;  // (sample, copy)
  for (uint32_t s : order) {
    for (uint32_t c = 0; c < reps; ++c) repeated.push_back({s, c});
  }
  const uint64_t per_rank = (order.size() * reps + world - 1) / world;
  const uint64_t total = per_rank * world;
  for (uint64_t i = 0; repeated.size() < total; ++i) {
    repeated.push_back(repeated[i]);
  }
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (uint64_t i = rank; i < total && out.size() < length; i += world) {
    out.push_back(repeated[i]);
  }
  return out;
}

TEST(Shard, RepeatedAugmentationIsRaSamplersOrderAtTheUsualLength) {
  for (uint32_t n : {1u, 7u, 43u, 256u}) {
    const std::vector<uint32_t> order = EpochPermutation(9, 2, n, true);
    for (uint32_t reps : {2u, 3u, 4u}) {
      for (uint32_t world : {1u, 2u, 3u, 8u}) {
        for (uint32_t rank = 0; rank < world; ++rank) {
          const Sharding s{rank, world, false, reps};
          const std::vector<uint32_t> shard = Shard(order, s);
          ASSERT_EQ(shard.size(), ShardSize(n, s));
          const auto want = RaSampler(order, reps, rank, world, shard.size());
          for (size_t i = 0; i < shard.size(); ++i) {
            EXPECT_EQ(shard[i], want[i].first) << n << " " << reps << " " << i;
            EXPECT_EQ(RepeatCopy(i, n, s), want[i].second);
          }
        }
      }
    }
  }
  // One rank, no shuffle: 0 0 0 0 1 1 1 1 ... for the first n positions.
  const Sharding one{0, 1, false, 4};
  const std::vector<uint32_t> shard =
      Shard(EpochPermutation(0, 0, 10, false), one);
  EXPECT_EQ(shard, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(RepeatCopy(5, 10, one), 1u);
}

TEST(BatchPlan, KeepsTheShortLastBatchUnlessDropLast) {
  const BatchPlan keep(10, 4, false);
  EXPECT_EQ(keep.batches_per_epoch(), 3u);
  EXPECT_EQ(keep.BatchSize(0), 4u);
  EXPECT_EQ(keep.BatchSize(2), 2u);
  EXPECT_EQ(keep.samples_per_epoch(), 10u);
  const BatchPlan drop(10, 4, true);
  EXPECT_EQ(drop.batches_per_epoch(), 2u);
  EXPECT_EQ(drop.samples_per_epoch(), 8u);
  const BatchPlan exact(8, 4, false);
  EXPECT_EQ(exact.batches_per_epoch(), 2u);
  EXPECT_EQ(exact.BatchSize(1), 4u);
}

}  // namespace
}  // namespace stoker
