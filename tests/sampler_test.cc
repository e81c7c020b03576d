#include "daemon/sampler.h"

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
