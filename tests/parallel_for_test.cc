// ParallelFor (common/parallel_for.h): every item once, and the first
// error wins over the cancellations it causes.
#include "common/parallel_for.h"

#include <atomic>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

TEST(ParallelFor, RunsEveryItemOnce) {
  std::vector<std::atomic<int>> runs(1000);
  const absl::Status status = ParallelFor().Run(1000, 4, [&](size_t i) {
    ++runs[i];
    return absl::OkStatus();
  });
  ASSERT_TRUE(status.ok()) << status;
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  EXPECT_TRUE(ParallelFor()
                  .Run(0, 4,
                       [](size_t) {
                         ADD_FAILURE() << "no item to run";
                         return absl::OkStatus();
                       })
                  .ok());
}

TEST(ParallelFor, ItemsAfterAFailureAreNotBegun) {
  std::atomic<int> ran{0};
  const absl::Status status = ParallelFor().Run(100, 1, [&](size_t i) {
    ++ran;
    return i == 3 ? absl::InternalError("item 3") : absl::OkStatus();
  });
  EXPECT_EQ(status, absl::InternalError("item 3"));
  EXPECT_EQ(ran.load(), 4);
}

TEST(ParallelFor, TheFirstFailureWinsOverTheCancellationsItCauses) {
  ParallelFor parallel;
  const absl::Status status = parallel.Run(2, 2, [&](size_t i) {
    if (i == 1) return absl::NotFoundError("the first failure");
    // Work in flight: gives up once it sees the other item failed.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (!parallel.stopped() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return absl::CancelledError("gave up");
  });
  EXPECT_EQ(status, absl::NotFoundError("the first failure"));
  EXPECT_TRUE(parallel.stopped());
  // A later Run starts afresh.
  std::atomic<int> ran{0};
  EXPECT_TRUE(parallel
                  .Run(5, 2,
                       [&](size_t) {
                         ++ran;
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_EQ(ran.load(), 5);
}

}  // namespace
}  // namespace stoker
