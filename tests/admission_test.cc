// Admission (daemon/jobs/admission.h) driven directly with exact accounts:
// no daemon, no threads, no clock. Each test states what the jobs hold and
// checks the one step admission answers, refusals word for word.
#include "daemon/jobs/admission.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace stoker {
namespace {

using Kind = AdmissionStep::Kind;

constexpr uint64_t kMiB = uint64_t{1} << 20;

AdmissionLimits Limits() {
  return {.max_jobs = 4,
          .max_jobs_per_user = 2,
          .budget = 1000 * kMiB,
          .budget_per_user = 600 * kMiB};
}

JobAccount Running(const std::string& id, uid_t owner, uint64_t mib) {
  return {.id = id, .owner = owner, .running = true, .ring_bytes = mib * kMiB};
}

JobAccount Ended(const std::string& id, uid_t owner, int64_t at_s) {
  // An ended job's ring is gone; what it was does not count.
  return {.id = id,
          .owner = owner,
          .ring_bytes = 500 * kMiB,
          .ended_at = absl::FromUnixSeconds(at_s)};
}

JobAccount Orphan(const std::string& id, uid_t owner, uint64_t mib,
                  int64_t unattended_s, bool remote = false) {
  JobAccount job = Running(id, owner, mib);
  job.orphan = true;
  job.unattended = absl::Seconds(unattended_s);
  job.remote = remote;
  return job;
}

Accounts Of(std::vector<JobAccount> jobs) {
  return {.jobs = std::move(jobs),
          .shm_dir = "/dev/shm",
          .shm_free = 8000 * kMiB,
          .cache_per_user = 1000 * kMiB};
}

Candidate Asking(uid_t owner, uint64_t mib, uint32_t slots = 4) {
  return {.owner = owner, .ring_bytes = mib * kMiB, .slots = slots};
}

TEST(Admission, AdmitsWithinEveryLimit) {
  Accounts accounts = Of({Running("a", 1, 300)});
  accounts.reserved = {{.owner = 2, .ring_bytes = 100 * kMiB}};
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(1, 300), true);
  EXPECT_EQ(step.kind, Kind::kAdmit);
  EXPECT_TRUE(step.refusal.ok());
}

TEST(Admission, AtTheJobLimitForgetsTheOldestEndedJobOfAnyone) {
  const Accounts accounts = Of({Running("a", 1, 100), Ended("b", 2, 20),
                                Ended("c", 3, 10), Running("d", 2, 100)});
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(1, 100), true);
  EXPECT_EQ(step.kind, Kind::kForgetEnded);
  EXPECT_EQ(step.job, "c");
}

TEST(Admission, AtTheUsersLimitForgetsOnlyTheCallersEndedJobs) {
  AdmissionLimits limits = Limits();
  limits.max_jobs = 10;
  const Accounts accounts =
      Of({Running("a", 1, 100), Ended("b", 1, 30), Ended("c", 2, 5)});
  const AdmissionStep step = Admission(limits).Next(accounts, Asking(1, 100),
                                                    /*end_orphans=*/true);
  EXPECT_EQ(step.kind, Kind::kForgetEnded);
  EXPECT_EQ(step.job, "b");  // not c, older but another user's
}

TEST(Admission, ReservationsCountAsJobsAndBytes) {
  Accounts accounts = Of({Running("a", 1, 100)});
  accounts.reserved = {{.owner = 1, .ring_bytes = 100 * kMiB}};
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(1, 100), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_EQ(step.refusal.message(),
            "uid 1 already runs 2 jobs, the limit per user "
            "(--max_jobs_per_user=2): delete jobs it no longer needs");
}

TEST(Admission, TheJobLimitRefusalNamesTheLargestHolders) {
  const Accounts accounts = Of({Running("a", 1, 100), Running("b", 2, 300),
                                Running("c", 2, 200), Running("d", 3, 50)});
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(4, 100), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_TRUE(absl::IsResourceExhausted(step.refusal));
  EXPECT_EQ(step.refusal.message(),
            "stokerd already holds 4 jobs, its limit (--max_jobs=4), all "
            "running (uid 2: 2 jobs, 500M; uid 1: 1 job, 100M; uid 3: 1 job, "
            "50M): delete jobs that are no longer needed");
}

TEST(Admission, ShmFreeSpaceIsCheckedFirst) {
  Accounts accounts = Of({Running("a", 2, 300)});
  accounts.shm_free = 200 * kMiB;
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(1, 400), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_EQ(step.refusal.message(),
            "the job's ring needs 400M of shared memory (4 slots of 100M); "
            "/dev/shm has only 200M free, and stokerd's own rings hold 300M "
            "of it (the rest is other programs' shared memory): free some or "
            "enlarge /dev/shm");
}

TEST(Admission, TheBudgetCountsRunningRingsAndReservationsNotEndedOnes) {
  Accounts accounts = Of({Running("a", 2, 500), Ended("b", 3, 1)});
  accounts.reserved = {{.owner = 3, .ring_bytes = 200 * kMiB}};
  const Admission admission(Limits());
  EXPECT_EQ(admission.Next(accounts, Asking(1, 300), true).kind, Kind::kAdmit);
  const AdmissionStep step = admission.Next(accounts, Asking(1, 301), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_EQ(step.refusal.message(),
            "the job's ring needs 301M of shared memory (4 slots of 77056K); "
            "running jobs hold 700M of stokerd's budget of 1000M "
            "(--shm_budget) (uid 2: 1 job, 500M; uid 3: 2 jobs, 200M): use "
            "fewer slots or a smaller batch, or delete a job");
}

TEST(Admission, ABudgetLoweredByTheCgroupSaysSo) {
  AdmissionLimits limits = Limits();
  limits.capped_by = 2048 * kMiB;
  const AdmissionStep step = Admission(limits).Next(
      Of({Running("a", 2, 500), Running("b", 3, 400)}), Asking(1, 200), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_NE(step.refusal.message().find(
                "(--shm_budget, lowered to what the memory limit of stokerd's "
                "cgroup, 2G, leaves after a reserve)"),
            std::string::npos)
      << step.refusal.message();
}

TEST(Admission, OneUsersShareOfTheBudget) {
  const AdmissionStep step = Admission(Limits()).Next(
      Of({Running("a", 1, 500)}), Asking(1, 200, 2), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_EQ(step.refusal.message(),
            "the job's ring needs 200M of shared memory (2 slots of 100M); "
            "uid 1's running jobs hold 500M of the 600M one user may hold "
            "(--shm_budget_per_user): use fewer slots or a smaller batch, or "
            "delete one of its jobs");
}

TEST(Admission, AnOrphanInTheWayIsEndedTheCallersOwnFirst) {
  const Accounts accounts =
      Of({Orphan("old", 2, 100, 500), Orphan("mine", 1, 100, 10),
          Orphan("mine-older", 1, 100, 60), Running("d", 3, 100)});
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(1, 100), true);
  EXPECT_EQ(step.kind, Kind::kEndOrphan);
  EXPECT_EQ(step.job, "mine-older");
}

TEST(Admission, AtTheJobLimitInAllAnyonesOrphanMakesRoom) {
  const Accounts accounts = Of({Orphan("x", 2, 100, 5), Orphan("y", 2, 100, 50),
                                Running("c", 3, 1), Running("d", 3, 1)});
  const AdmissionStep step =
      Admission(Limits()).Next(accounts, Asking(1, 100), true);
  EXPECT_EQ(step.kind, Kind::kEndOrphan);
  EXPECT_EQ(step.job, "y");  // the longest unattended
}

TEST(Admission, AtTheUsersOwnLimitAnotherUsersOrphanIsLeftAlone) {
  AdmissionLimits limits = Limits();
  limits.max_jobs = 10;
  const Accounts accounts = Of(
      {Running("a", 1, 100), Running("b", 1, 100), Orphan("theirs", 2, 1, 99)});
  const AdmissionStep step =
      Admission(limits).Next(accounts, Asking(1, 100), true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  // The same, over the user's share of the budget.
  const AdmissionStep bytes = Admission(limits).Next(
      Of({Running("a", 1, 550), Orphan("theirs", 2, 300, 99)}), Asking(1, 100),
      true);
  EXPECT_EQ(bytes.kind, Kind::kRefuse);
}

TEST(Admission, OrphansAreEndedOnlyWhenOffered) {
  const Accounts accounts = Of({Orphan("o", 2, 900, 99), Running("b", 3, 50)});
  EXPECT_EQ(Admission(Limits()).Next(accounts, Asking(1, 100), true).kind,
            Kind::kEndOrphan);
  EXPECT_EQ(Admission(Limits()).Next(accounts, Asking(1, 100), false).kind,
            Kind::kRefuse);
}

TEST(Admission, ASharedIndexCountsOnceAgainstTheUsersIndexLimit) {
  AdmissionLimits limits = Limits();
  limits.max_index_bytes_per_user = 1000;
  limits.max_jobs = 10;
  limits.max_jobs_per_user = 10;
  const int shared = 0, other = 0, own = 0;
  std::vector<JobAccount> jobs = {Running("a", 1, 1), Running("b", 1, 1),
                                  Running("c", 2, 1)};
  jobs[0].index = jobs[1].index = &shared;  // two jobs over the same data
  jobs[0].index_bytes = jobs[1].index_bytes = 600;
  jobs[2].index = &other;  // another user's
  jobs[2].index_bytes = 5000;
  Candidate candidate = Asking(1, 1);
  candidate.dataset_known = true;
  candidate.index = &own;
  candidate.index_bytes = 400;
  EXPECT_EQ(Admission(limits).Next(Of(jobs), candidate, true).kind,
            Kind::kAdmit);
  candidate.index_bytes = 401;
  jobs.push_back(Orphan("o", 1, 1, 99));  // index refusals end no orphan
  const AdmissionStep step = Admission(limits).Next(Of(jobs), candidate, true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_EQ(step.refusal.message(),
            "the dataset's index takes 401 of memory; with the indexes uid 1's "
            "jobs hold it would be 1001, past the 1000 one user's jobs may "
            "hold (--max_index_per_user): delete jobs over other datasets, or "
            "split the dataset");
  // Before the dataset is known, only the job and ring limits apply.
  candidate.dataset_known = false;
  EXPECT_EQ(Admission(limits).Next(Of(jobs), candidate, true).kind,
            Kind::kAdmit);
}

TEST(Admission, StreamedWindowsOfTheUsersLiveJobsShareItsCacheRoom) {
  std::vector<JobAccount> jobs = {Running("a", 1, 1), Running("b", 2, 1),
                                  Orphan("o", 1, 1, 99)};
  for (JobAccount& job : jobs) job.streamed = true;
  jobs[0].stream_room = 500 * kMiB;
  jobs[1].stream_room = 900 * kMiB;  // another user's
  jobs[2].stream_room = 900 * kMiB;  // an orphan's: taken back when needed
  AdmissionLimits limits = Limits();
  limits.max_jobs = 10;
  limits.max_jobs_per_user = 10;
  Candidate candidate = Asking(1, 1);
  candidate.dataset_known = true;
  candidate.streamed = true;
  candidate.stream_room = 500 * kMiB;
  EXPECT_EQ(Admission(limits).Next(Of(jobs), candidate, true).kind,
            Kind::kAdmit);
  candidate.stream_room = 501 * kMiB;
  const AdmissionStep step = Admission(limits).Next(Of(jobs), candidate, true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_EQ(step.refusal.message(),
            "with uid 1's 1 other streamed job(s), two windows each would "
            "take 1001M of the shard cache, past the 1000M one user may hold "
            "(--cache_size_per_user): use a smaller shuffle_window, or end a "
            "job");
}

TEST(Admission, AStreamedJobOfUnknownShardSizesStillMeetsTheOthersWindows) {
  // Shards counted from sizes.json have no known size: such a job's own
  // windows count 0, but the user's other streamed jobs still fill the
  // cache, and a job that does not stream is not checked at all.
  JobAccount other = Running("a", 1, 1);
  other.streamed = true;
  other.stream_room = 1200 * kMiB;
  AdmissionLimits limits = Limits();
  limits.max_jobs_per_user = 10;
  Candidate candidate = Asking(1, 1);
  candidate.dataset_known = true;
  EXPECT_EQ(Admission(limits).Next(Of({other}), candidate, true).kind,
            Kind::kAdmit);
  candidate.streamed = true;
  const AdmissionStep step =
      Admission(limits).Next(Of({other}), candidate, true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_NE(step.refusal.message().find("would take 1200M"), std::string::npos)
      << step.refusal.message();
}

TEST(Admission, AStreamedJobBeingCreatedHoldsItsWindowsToo) {
  AdmissionLimits limits = Limits();
  limits.max_jobs_per_user = 10;
  Accounts accounts = Of({});
  // Two Create()s of one user at once: the second sees the first's
  // reservation, so both cannot pass the check and overfill the cache.
  accounts.reserved = {
      {.owner = 1, .ring_bytes = kMiB, .stream_room = 600 * kMiB},
      {.owner = 2, .ring_bytes = kMiB, .stream_room = 900 * kMiB}};
  Candidate candidate = Asking(1, 1);
  candidate.dataset_known = true;
  candidate.streamed = true;
  candidate.stream_room = 400 * kMiB;
  EXPECT_EQ(Admission(limits).Next(accounts, candidate, true).kind,
            Kind::kAdmit);
  candidate.stream_room = 401 * kMiB;
  const AdmissionStep step = Admission(limits).Next(accounts, candidate, true);
  EXPECT_EQ(step.kind, Kind::kRefuse);
  EXPECT_NE(step.refusal.message().find("uid 1's 1 other streamed job(s)"),
            std::string::npos)
      << step.refusal.message();
}

TEST(Admission, PickOrphanForTheShardCacheTakesOnlyTheUsersRemoteOnes) {
  const Accounts accounts =
      Of({Orphan("local", 1, 1, 500), Orphan("remote", 1, 1, 5, true),
          Orphan("theirs", 2, 1, 900, true), Running("live", 1, 1)});
  EXPECT_EQ(Admission::PickOrphan(accounts, 1, false, true), "remote");
  EXPECT_EQ(Admission::PickOrphan(accounts, 1, false, false), "local");
  EXPECT_EQ(Admission::PickOrphan(accounts, 3, false, false), std::nullopt);
  EXPECT_EQ(Admission::PickOrphan(accounts, 3, true, false), "theirs");
}

}  // namespace
}  // namespace stoker
