// FairScheduler: which job a free worker serves next. Pure bookkeeping (no
// threads, no jobs, no clock of its own: the worker time each pick cost is
// passed in), so that its sequences can be tested exactly.
//
// Worker time is shared in two levels, as in hierarchical fair queueing:
// first equally between the users (the jobs' owner uids) that have work,
// then, within a user, by the jobs' weights. So the user with the least
// worker time goes next, and of its jobs the one with the least weighted
// worker time (time / weight); a weight can only move time between one
// user's own jobs, never take it from another user. At each level a job
// whose consumer waits with nothing to receive goes before one that only
// prefetches, unless it is already kWaitingBonus ahead. A user or job that
// had no work does not bank credit for the time it was idle: its account is
// lifted to within kIdleCredit of the others when it returns. A new user,
// or a new job, starts level with the others (no debt, no credit).
//
// Not thread-safe: WorkerPool calls it under its lock.
#ifndef STOKER_DAEMON_JOBS_FAIR_SCHEDULER_H_
#define STOKER_DAEMON_JOBS_FAIR_SCHEDULER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <vector>

namespace stoker {

class FairScheduler {
 public:
  // How far (in weighted worker nanoseconds) a job that comes back from
  // idle may be behind the others: enough for a prompt first batch, not
  // enough to starve them while it catches up.
  static constexpr double kIdleCredit = 50e6;
  // How much a job whose consumer is waiting is preferred over one that
  // only prefetches: it goes first unless it already had this much more
  // (weighted) worker time, so waiting consumers are served promptly while
  // the long-run shares still follow the weights.
  static constexpr double kWaitingBonus = 20e6;

  // A job, by a key unique among the jobs added (the job's serial).
  void Add(uint64_t job, uid_t user, double weight);
  // Forgets a job (and its user with its last job); unknown keys are
  // ignored.
  void Remove(uint64_t job);

  // A job that has work now; `waiting`: a consumer of it waits with
  // nothing to receive.
  struct Want {
    uint64_t job;
    bool waiting;
  };
  // The order in which to offer the wanting jobs a worker: indices into
  // `wants`, best first (ties keep their order in `wants`). Lifts the
  // accounts of those back from idle (see kIdleCredit). Every job in
  // `wants` must have been added.
  std::vector<size_t> Rank(const std::vector<Want>& wants);
  // The worker took a sample of `job` (the first of Rank's order that had
  // one): moves the clocks idle users and jobs are lifted towards.
  void Picked(uint64_t job);
  // `ns` worker nanoseconds were spent on `job` (ignored if removed since).
  void Charge(uint64_t job, uint64_t ns);

  // Accounts, for tests and stats: worker nanoseconds (a job's divided by
  // its weight); 0 for an unknown key.
  double job_account(uint64_t job) const;
  double user_account(uid_t user) const;

 private:
  struct Job {
    uid_t user;
    double weight;
    double account = 0;  // worker nanoseconds spent on it / weight
  };
  struct User {
    double account = 0;    // worker nanoseconds spent on its jobs
    double job_clock = 0;  // the account of its job last picked
    int jobs = 0;
  };

  std::map<uint64_t, Job> jobs_;
  std::map<uid_t, User> users_;
  // The account of the user last picked: what an idle user is lifted
  // towards (a job: towards its user's job_clock).
  double clock_ = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_FAIR_SCHEDULER_H_
