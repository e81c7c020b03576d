// The two-level fair scheduler (daemon/jobs/fair_scheduler.h) driven
// directly with exact sequences: no daemon, no threads, no clock. Each
// "pick" ranks the jobs that want work, takes the first, and charges it the
// worker time it cost, as WorkerPool does.
#include "daemon/jobs/fair_scheduler.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace stoker {
namespace {

constexpr uint64_t kMs = 1'000'000;  // one sample's worker time, in ns

class FairSchedulerTest : public ::testing::Test {
 protected:
  // One worker decision among `wanting` (every one prefetching, but those
  // in `waiting`); returns the job picked and charges it `ns`.
  uint64_t Pick(const std::vector<uint64_t>& wanting,
                const std::set<uint64_t>& waiting = {}, uint64_t ns = kMs) {
    std::vector<FairScheduler::Want> wants;
    for (uint64_t job : wanting) wants.push_back({job, waiting.count(job) > 0});
    const uint64_t job = wants[scheduler_.Rank(wants).front()].job;
    scheduler_.Picked(job);
    scheduler_.Charge(job, ns);
    return job;
  }
  // `n` picks among `wanting`, as a string of job keys ("1212...").
  std::string Sequence(const std::vector<uint64_t>& wanting, int n,
                       const std::set<uint64_t>& waiting = {}) {
    std::string picks;
    for (int i = 0; i < n; ++i) picks += std::to_string(Pick(wanting, waiting));
    return picks;
  }
  std::map<uint64_t, int> Counts(const std::vector<uint64_t>& wanting, int n) {
    std::map<uint64_t, int> counts;
    for (int i = 0; i < n; ++i) ++counts[Pick(wanting)];
    return counts;
  }

  FairScheduler scheduler_;
};

TEST_F(FairSchedulerTest, TwoUsersAlternate) {
  scheduler_.Add(1, 1000, 1);
  scheduler_.Add(2, 1001, 1);
  EXPECT_EQ(Sequence({1, 2}, 8), "12121212");
}

TEST_F(FairSchedulerTest, UsersShareEquallyWhateverTheirJobCount) {
  // User 1000 has three jobs, user 1001 one: half the time each, and user
  // 1000's half split between its jobs.
  scheduler_.Add(1, 1000, 1);
  scheduler_.Add(2, 1000, 1);
  scheduler_.Add(3, 1000, 1);
  scheduler_.Add(4, 1001, 1);
  const auto counts = Counts({1, 2, 3, 4}, 600);
  EXPECT_EQ(counts.at(4), 300);
  EXPECT_EQ(counts.at(1), 100);
  EXPECT_EQ(counts.at(2), 100);
  EXPECT_EQ(counts.at(3), 100);
}

TEST_F(FairSchedulerTest, WeightsSplitAUsersShareOnly) {
  // Within user 1000, weight 3 against 1; user 1001's job has weight 10,
  // which takes nothing from user 1000.
  scheduler_.Add(1, 1000, 3);
  scheduler_.Add(2, 1000, 1);
  scheduler_.Add(3, 1001, 10);
  const auto counts = Counts({1, 2, 3}, 800);
  EXPECT_EQ(counts.at(3), 400);
  EXPECT_EQ(counts.at(1), 300);
  EXPECT_EQ(counts.at(2), 100);
  EXPECT_DOUBLE_EQ(scheduler_.user_account(1000), 400.0 * kMs);
  EXPECT_NEAR(scheduler_.job_account(1), 300.0 * kMs / 3, 1);
}

TEST_F(FairSchedulerTest, AWaitingConsumerGoesFirstUntilBonusAhead) {
  scheduler_.Add(1, 1000, 1);
  scheduler_.Add(2, 1001, 1);
  // Job 2 waits: it goes first until it is kWaitingBonus (20 ms) ahead
  // (at a tie the lower uid goes first), then the two alternate, job 2
  // holding its 20 ms lead.
  const std::string picks = Sequence({1, 2}, 26, {2});
  EXPECT_EQ(picks, std::string(20, '2') + "121212");
  EXPECT_DOUBLE_EQ(
      scheduler_.user_account(1001) - scheduler_.user_account(1000),
      FairScheduler::kWaitingBonus);
}

TEST_F(FairSchedulerTest, AnIdleUserComesBackWithBoundedCredit) {
  scheduler_.Add(1, 1000, 1);
  scheduler_.Add(2, 1001, 1);
  // User 1001's job has no work for 1000 picks (a second of worker time).
  EXPECT_EQ(Sequence({1}, 1000), std::string(1000, '1'));
  // Back: it catches up kIdleCredit (50 ms), then they alternate; it
  // does not take back the whole second.
  const std::string picks = Sequence({1, 2}, 56);
  EXPECT_EQ(picks, std::string(50, '2') + "212121");
}

TEST_F(FairSchedulerTest, ANewUserStartsLevelWithTheOthers) {
  scheduler_.Add(1, 1000, 1);
  EXPECT_EQ(Sequence({1}, 500), std::string(500, '1'));
  scheduler_.Add(2, 1001, 1);
  // No debt for user 1000's 500 ms, no banked credit for the newcomer.
  EXPECT_EQ(Sequence({1, 2}, 6), "212121");
}

TEST_F(FairSchedulerTest, ANewJobStartsLevelWithItsUsersOthers) {
  scheduler_.Add(1, 1000, 1);
  EXPECT_EQ(Sequence({1}, 300), std::string(300, '1'));
  scheduler_.Add(2, 1000, 1);
  EXPECT_EQ(Sequence({1, 2}, 6), "212121");
}

TEST_F(FairSchedulerTest, RemovedJobsAndUsersAreForgotten) {
  scheduler_.Add(1, 1000, 1);
  scheduler_.Add(2, 1001, 1);
  EXPECT_EQ(Sequence({1, 2}, 4), "1212");
  scheduler_.Remove(2);
  scheduler_.Charge(2, 100 * kMs);  // a sample that finished after removal
  EXPECT_EQ(scheduler_.user_account(1001), 0);
  scheduler_.Remove(2);  // twice: nothing
  scheduler_.Remove(99);
  EXPECT_EQ(Sequence({1}, 3), "111");
  EXPECT_DOUBLE_EQ(scheduler_.user_account(1000), 5.0 * kMs);
}

TEST_F(FairSchedulerTest, RankOffersEveryWantingJobInOrder) {
  // A job whose ring is full after Rank (TakeTask fails) must leave the
  // next ones in order: Rank gives all of them.
  scheduler_.Add(1, 1000, 1);
  scheduler_.Add(2, 1000, 1);
  scheduler_.Add(3, 1001, 1);
  scheduler_.Charge(1, 5 * kMs);
  scheduler_.Charge(3, 2 * kMs);
  // User 1001 (2 ms) before user 1000 (5 ms); within 1000, job 2 (0 ms)
  // before job 1 (5 ms).
  const std::vector<FairScheduler::Want> wants = {
      {1, false}, {2, false}, {3, false}};
  EXPECT_EQ(scheduler_.Rank(wants), (std::vector<size_t>{2, 1, 0}));
}

}  // namespace
}  // namespace stoker
