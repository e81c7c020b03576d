#include "daemon/jobs/fair_scheduler.h"

#include <algorithm>
#include <numeric>

#include "common/check.h"

namespace stoker {

void FairScheduler::Add(uint64_t job, uid_t user, double weight) {
  STOKER_CHECK(jobs_.count(job) == 0);  // a job's serial is never reused
  auto [it, added] = users_.try_emplace(user);
  User& owner = it->second;
  if (added) owner.account = clock_;
  ++owner.jobs;
  jobs_[job] = {user, weight, owner.job_clock};
}

void FairScheduler::Remove(uint64_t job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  auto user = users_.find(it->second.user);
  if (user != users_.end() && --user->second.jobs == 0) users_.erase(user);
  jobs_.erase(it);
}

std::vector<size_t> FairScheduler::Rank(const std::vector<Want>& wants) {
  // Each want's user, its key at the user level (its user's best: the
  // user's account, less the bonus if any of its jobs waits) and its own.
  std::vector<uid_t> users(wants.size());
  std::vector<double> keys(wants.size());
  std::map<uid_t, double> best;
  for (size_t i = 0; i < wants.size(); ++i) {
    Job& job = jobs_.at(wants[i].job);
    User& user = users_.at(job.user);
    user.account = std::max(user.account, clock_ - kIdleCredit);
    job.account = std::max(job.account, user.job_clock - kIdleCredit);
    const double bonus = wants[i].waiting ? kWaitingBonus : 0;
    auto [it, added] = best.try_emplace(job.user, user.account - bonus);
    it->second = std::min(it->second, user.account - bonus);
    users[i] = job.user;
    keys[i] = job.account - bonus;
  }
  std::vector<double> user_keys(wants.size());
  for (size_t i = 0; i < wants.size(); ++i) user_keys[i] = best[users[i]];
  std::vector<size_t> order(wants.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (user_keys[a] != user_keys[b]) return user_keys[a] < user_keys[b];
    if (users[a] != users[b]) return users[a] < users[b];
    return keys[a] < keys[b];
  });
  return order;
}

void FairScheduler::Picked(uint64_t job) {
  const Job& picked = jobs_.at(job);
  User& user = users_.at(picked.user);
  clock_ = std::max(clock_, user.account);
  user.job_clock = std::max(user.job_clock, picked.account);
}

void FairScheduler::Charge(uint64_t job, uint64_t ns) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  it->second.account += static_cast<double>(ns) / it->second.weight;
  users_.at(it->second.user).account += static_cast<double>(ns);
}

double FairScheduler::job_account(uint64_t job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.account;
}

double FairScheduler::user_account(uid_t user) const {
  auto it = users_.find(user);
  return it == users_.end() ? 0 : it->second.account;
}

}  // namespace stoker
