// LeaseTable: who holds one consumer's batches, decided in shared memory.
//
// Each attached consumer has a table of one page: a word per slot of the
// job's ring, and a record of why the daemon ended the consumer. stokerd
// creates it (a sealed memfd, so neither side can resize it) and hands it,
// read-write, only to the process that attached (the ring socket, with the
// secret token of its Attached reply). A word holds
//
//   generation << 2 | state,   state: kLeased, kClaimed or kRevoked
//
// and changes only by compare-and-swap, so each lease has exactly one
// outcome, whatever the two sides do at once and however long either is
// stopped:
//
//   daemon  Lease():   the batch of that generation is now this consumer's
//   client  Claim():   kLeased -> kClaimed. The consumer used the batch; the
//                      daemon will never give it to anyone else.
//   daemon  Revoke():  kLeased -> kRevoked, when it takes the lease back
//                      (the consumer was detached, evicted or went away).
//                      Only then may the batch go to another consumer; a
//                      lease found kClaimed counts as released instead.
//   client  Revoke():  the same, for a stream that broke while the daemon
//                      could not (a daemon restart): the batch will be
//                      delivered again, so this copy is void.
//
// The daemon writes the reason (a status) before it revokes anything, so a
// client that finds a lease revoked can say why. The daemon trusts nothing
// in the page: it keeps its own copy of what it leased and only ever
// compare-and-swaps the words; whatever a client writes there decides only
// the fate of its own leases, as releasing them would.
//
// Thread-safety: the words are atomics; Finish() and the daemon's methods
// are called under the job's lock; client methods from any thread.
#ifndef STOKER_COMMON_LEASE_TABLE_H_
#define STOKER_COMMON_LEASE_TABLE_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace stoker {

inline constexpr uint32_t kMaxLeaseSlots = 256;  // as kMaxSlots of a job
inline constexpr size_t kLeaseTableBytes = 4096;

class LeaseTable {
 public:
  // Daemon: a new table for a ring of `slots` slots, owned by `uid` (who
  // may fetch it) and fetched with `token`.
  static absl::StatusOr<std::unique_ptr<LeaseTable>> Create(uint32_t slots,
                                                            uid_t uid);
  // Client: maps the table open on `fd`, checked.
  static absl::StatusOr<std::unique_ptr<LeaseTable>> Map(UniqueFd fd);
  ~LeaseTable();
  LeaseTable(const LeaseTable&) = delete;
  LeaseTable& operator=(const LeaseTable&) = delete;

  // Daemon side.
  const std::string& token() const { return token_; }
  uid_t uid() const { return uid_; }
  // The descriptor, for the one process that fetches it (then closed here).
  UniqueFd TakeFd() { return std::move(fd_); }
  void Lease(uint32_t slot, uint64_t generation);
  // Takes the lease of `slot` back; true if the consumer had claimed it.
  bool Revoke(uint32_t slot);
  // Records why the consumer ended (first reason only).
  void Finish(const absl::Status& why);

  // Client side. Claim: true if the lease of `slot` at `generation` is now
  // (or already was) this consumer's for good.
  bool Claim(uint32_t slot, uint64_t generation);
  // Whether the lease is still live: leased or claimed.
  bool Live(uint32_t slot, uint64_t generation) const;
  // Takes back every lease not claimed (the stream broke).
  void RevokeUnclaimed();
  // Why the daemon ended this consumer; OK while it has not.
  absl::Status Ended() const;

 public:
  struct Layout;  // the page (lease_table.cc)

 private:
  LeaseTable(Layout* page, UniqueFd fd) : page_(page), fd_(std::move(fd)) {}
  std::atomic<uint64_t>& Word(uint32_t slot) const;

  Layout* const page_;
  UniqueFd fd_;
  std::string token_;
  uid_t uid_ = 0;
  bool finished_ = false;
  // Daemon: what it leased, per slot (never read back from the page).
  std::array<uint64_t, kMaxLeaseSlots> leased_{};
};

}  // namespace stoker

#endif  // STOKER_COMMON_LEASE_TABLE_H_
