#include "daemon/jobs/admission.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/os/byte_size.h"

namespace stoker {
namespace {

using Holdings = std::map<uid_t, Admission::Holding>;

// Jobs in all (reservations included); what each user holds into *by_user.
uint32_t CountHoldings(const Accounts& accounts, Holdings* by_user) {
  by_user->clear();
  for (const JobAccount& job : accounts.jobs) {
    Admission::Holding& h = (*by_user)[job.owner];
    ++h.jobs;
    if (job.running) h.bytes += job.ring_bytes;
  }
  for (const Reservation& r : accounts.reserved) {
    ++(*by_user)[r.owner].jobs;
    (*by_user)[r.owner].bytes += r.ring_bytes;
  }
  return static_cast<uint32_t>(accounts.jobs.size() + accounts.reserved.size());
}

// The ended job that ended first (of `owner` unless nullopt), or null.
const JobAccount* OldestEnded(const Accounts& accounts,
                              std::optional<uid_t> owner) {
  const JobAccount* oldest = nullptr;
  for (const JobAccount& job : accounts.jobs) {
    if (job.running || (owner && job.owner != *owner)) continue;
    if (oldest == nullptr || job.ended_at < oldest->ended_at) oldest = &job;
  }
  return oldest;
}

// "uid 1000: 3 jobs, 1.5G; uid 0: 1 job, 200M" for the largest holders.
std::string Holders(const Holdings& by_user) {
  std::vector<std::pair<uid_t, Admission::Holding>> sorted;
  for (const auto& entry : by_user) {
    if (entry.second.jobs > 0) sorted.push_back(entry);
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) {
                     return a.second.bytes > b.second.bytes;
                   });
  std::string text;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) {
    const Admission::Holding& h = sorted[i].second;
    absl::StrAppend(&text, i ? "; " : "", "uid ", sorted[i].first, ": ", h.jobs,
                    h.jobs == 1 ? " job, " : " jobs, ",
                    FormatByteSize(h.bytes));
  }
  return text;
}

AdmissionStep Refuse(absl::Status why) {
  return {.kind = AdmissionStep::Kind::kRefuse, .refusal = std::move(why)};
}

}  // namespace

AdmissionStep Admission::Next(const Accounts& accounts,
                              const Candidate& candidate,
                              bool end_orphans) const {
  Holdings by_user;
  const uint32_t jobs = CountHoldings(accounts, &by_user);
  const JobAccount* ended = nullptr;
  if (jobs >= limits_.max_jobs) {
    ended = OldestEnded(accounts, std::nullopt);
  } else if (by_user[candidate.owner].jobs >= limits_.max_jobs_per_user) {
    ended = OldestEnded(accounts, candidate.owner);
  }
  if (ended != nullptr) {
    return {.kind = AdmissionStep::Kind::kForgetEnded, .job = ended->id};
  }
  bool per_user = false;
  absl::Status room = CheckRoom(accounts, candidate, by_user, &per_user);
  if (!room.ok()) {
    const std::optional<std::string> orphan =
        end_orphans ? PickOrphan(accounts, candidate.owner,
                                 /*any_user=*/!per_user, /*remote_only=*/false)
                    : std::nullopt;
    if (!orphan) return Refuse(std::move(room));
    return {.kind = AdmissionStep::Kind::kEndOrphan, .job = *orphan};
  }
  if (candidate.dataset_known) {
    if (absl::Status index = CheckIndex(accounts, candidate); !index.ok()) {
      return Refuse(std::move(index));
    }
    if (absl::Status stream = CheckStreamRoom(accounts, candidate);
        !stream.ok()) {
      return Refuse(std::move(stream));
    }
  }
  return {};
}

std::optional<std::string> Admission::PickOrphan(const Accounts& accounts,
                                                 uid_t owner, bool any_user,
                                                 bool remote_only) {
  const JobAccount* best = nullptr;
  for (const JobAccount& job : accounts.jobs) {
    if (!job.orphan || (!any_user && job.owner != owner) ||
        (remote_only && !job.remote)) {
      continue;
    }
    // The caller's own orphans first, then the longest unattended.
    const auto rank = [owner](const JobAccount& j) {
      return std::make_pair(j.owner == owner, j.unattended);
    };
    if (best == nullptr || rank(job) > rank(*best)) best = &job;
  }
  if (best == nullptr) return std::nullopt;
  return best->id;
}

absl::Status Admission::CheckRoom(const Accounts& accounts,
                                  const Candidate& candidate, Holdings& by_user,
                                  bool* per_user) const {
  const uid_t uid = candidate.owner;
  const uint32_t jobs =
      static_cast<uint32_t>(accounts.jobs.size() + accounts.reserved.size());
  if (jobs >= limits_.max_jobs) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "stokerd already holds ", jobs,
        " jobs, its limit (--max_jobs=", limits_.max_jobs, "), all running (",
        Holders(by_user), "): delete jobs that are no longer needed"));
  }
  if (by_user[uid].jobs >= limits_.max_jobs_per_user) {
    *per_user = true;
    return absl::ResourceExhaustedError(absl::StrCat(
        "uid ", uid, " already runs ", by_user[uid].jobs,
        " jobs, the limit per user (--max_jobs_per_user=",
        limits_.max_jobs_per_user, "): delete jobs it no longer needs"));
  }
  return CheckRing(accounts, candidate, by_user, per_user);
}

absl::Status Admission::CheckRing(const Accounts& accounts,
                                  const Candidate& candidate, Holdings& by_user,
                                  bool* per_user) const {
  const uid_t uid = candidate.owner;
  const uint64_t bytes = candidate.ring_bytes;
  uint64_t held = 0;
  for (const auto& [owner, h] : by_user) held += h.bytes;
  const std::string ring = absl::StrCat(
      "the job's ring needs ", FormatByteSize(bytes), " of shared memory (",
      candidate.slots, " slots of ",
      FormatByteSize(bytes / std::max<uint32_t>(candidate.slots, 1)), "); ");
  // The most direct cause first: /dev/shm itself cannot hold it.
  if (bytes > accounts.shm_free) {
    return absl::ResourceExhaustedError(absl::StrCat(
        ring, accounts.shm_dir, " has only ", FormatByteSize(accounts.shm_free),
        " free, and stokerd's own rings hold ", FormatByteSize(held),
        " of it (the rest is other programs' shared memory): free some or "
        "enlarge ",
        accounts.shm_dir));
  }
  if (held + bytes > limits_.budget) {
    const std::string why =
        limits_.capped_by
            ? absl::StrCat(
                  "--shm_budget, lowered to what the memory limit of "
                  "stokerd's cgroup, ",
                  FormatByteSize(*limits_.capped_by),
                  ", leaves after a reserve")
            : "--shm_budget";
    return absl::ResourceExhaustedError(
        absl::StrCat(ring, "running jobs hold ", FormatByteSize(held),
                     " of stokerd's budget of ", FormatByteSize(limits_.budget),
                     " (", why, ") (", Holders(by_user),
                     "): use fewer slots or a smaller batch, or delete a job"));
  }
  if (by_user[uid].bytes + bytes > limits_.budget_per_user) {
    *per_user = true;
    return absl::ResourceExhaustedError(absl::StrCat(
        ring, "uid ", uid, "'s running jobs hold ",
        FormatByteSize(by_user[uid].bytes), " of the ",
        FormatByteSize(limits_.budget_per_user),
        " one user may hold (--shm_budget_per_user): use fewer slots or a "
        "smaller batch, or delete one of its jobs"));
  }
  return absl::OkStatus();
}

absl::Status Admission::CheckIndex(const Accounts& accounts,
                                   const Candidate& candidate) const {
  const uint64_t limit = limits_.max_index_bytes_per_user;
  if (limit == 0) return absl::OkStatus();
  // Each index (or streamed job's shard table) once, however many jobs
  // share it.
  std::map<const void*, uint64_t> held = {
      {candidate.index, candidate.index_bytes}};
  for (const JobAccount& job : accounts.jobs) {
    if (job.owner == candidate.owner && job.index != nullptr) {
      held[job.index] = job.index_bytes;
    }
  }
  uint64_t bytes = 0;
  for (const auto& [key, b] : held) bytes += b;
  if (bytes <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the dataset's index takes ", FormatByteSize(candidate.index_bytes),
      " of memory; with the indexes uid ", candidate.owner,
      "'s jobs hold it would be ", FormatByteSize(bytes), ", past the ",
      FormatByteSize(limit),
      " one user's jobs may hold (--max_index_per_user): delete jobs over "
      "other datasets, or split the dataset"));
}

absl::Status Admission::CheckStreamRoom(const Accounts& accounts,
                                        const Candidate& candidate) const {
  if (!candidate.streamed) return absl::OkStatus();
  // Each job its own two windows, even two jobs of the same order: one
  // whose consumer pauses keeps its windows while the other goes on. An
  // orphan's windows are taken back when a window needs the room.
  uint64_t needs = candidate.stream_room;
  uint32_t others = 0;
  for (const JobAccount& job : accounts.jobs) {
    if (job.owner != candidate.owner || !job.streamed || !job.running ||
        job.orphan) {
      continue;
    }
    needs += job.stream_room;
    ++others;
  }
  // Another Create() of the user's between its check and its job.
  for (const Reservation& r : accounts.reserved) {
    if (r.owner != candidate.owner || r.stream_room == 0) continue;
    needs += r.stream_room;
    ++others;
  }
  const uint64_t room = accounts.cache_per_user;
  if (needs <= room) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("with uid ", candidate.owner, "'s ", others,
                   " other streamed job(s), two windows each would take ",
                   FormatByteSize(needs), " of the shard cache, past the ",
                   FormatByteSize(room),
                   " one user may hold (--cache_size_per_user): use a smaller "
                   "shuffle_window, or end a job"));
}

}  // namespace stoker
