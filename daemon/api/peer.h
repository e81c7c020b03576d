// Who is on the other end of a connection, as the kernel says (SO_PEERCRED),
// and what that peer may see.
//
// stokerd accepts its Unix-socket connections itself (see Listener), reads
// each one's credentials, and records them in a PeerTable under the name
// gRPC gives the connection ("fd:<n>"). Handlers look their caller up with
// PeerOf(context). Group membership is the peer's own (its supplementary
// groups as the kernel reports them), not the group database's. The SDK's
// "stoker-client" metadata only labels a client for limits and stats; ownership
// and access are decided by the uid.
//
// Thread-safety: PeerTable is thread-safe; the functions are pure.
#ifndef STOKER_DAEMON_API_PEER_H_
#define STOKER_DAEMON_API_PEER_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "daemon/spec/job_config.h"

namespace stoker {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  // Supplementary groups, as the kernel reports them (SO_PEERGROUPS).
  std::vector<gid_t> groups;
};

// A caller: its verified credentials (absent if unknown) and the client
// label its SDK claims.
struct Peer {
  std::optional<PeerCredentials> credentials;
  std::string client;
};

// The credentials of the process at the other end of Unix socket `fd`.
absl::StatusOr<PeerCredentials> ReadPeerCredentials(int fd);

// The gRPC connections stokerd accepted: who holds each, and whether it
// has made a call yet. Connections are counted per user from Admit() until
// Release(), which the relay calls once both of a connection's ends are
// closed (gRPC closing its end alone does not end the count): past
// `max_per_user`, or `max_total` in all, new ones are refused; one that
// makes no call within `handshake_timeout` is shut down by Sweep().
class PeerTable {
 public:
  PeerTable(uint32_t max_per_user, absl::Duration handshake_timeout,
            uint32_t max_total);

  // Records the connection on `fd` (replacing an earlier, closed one that
  // had the same descriptor number), or RESOURCE_EXHAUSTED naming the limit
  // its user (or everyone) is at. `pending` connections of the same user
  // elsewhere (the ring socket's) count too.
  absl::Status Admit(int fd, const PeerCredentials& credentials,
                     uint32_t pending = 0);
  // A connection of `uid` admitted before is closed at both ends.
  void Release(uid_t uid);
  // The credentials for a gRPC peer string ("fd:<n>"); the connection
  // counts as having made a call.
  std::optional<PeerCredentials> Find(std::string_view peer) const;
  // Forgets the connections gRPC has closed and shuts down those that made
  // no call within the handshake timeout; returns how many it shut down.
  // Call from the thread that accepts (so no descriptor number is reused
  // under it by an accept).
  int Sweep(absl::Time now);
  // Connections of `uid` admitted and not yet released.
  uint32_t CountFor(uid_t uid) const;
  uint32_t max_per_user() const;
  void SetLimits(uint32_t max_per_user, absl::Duration handshake_timeout);

 private:
  struct Connection {
    PeerCredentials credentials;
    ino_t inode = 0;  // of the socket: tells a reused number apart
    absl::Time accepted;
    mutable bool used = false;  // set by Find(), under mu_
    bool shut = false;
  };

  mutable absl::Mutex mu_;
  std::map<int, Connection> by_fd_ ABSL_GUARDED_BY(mu_);
  std::map<uid_t, uint32_t> held_ ABSL_GUARDED_BY(mu_);  // admitted, by user
  uint64_t held_total_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t max_per_user_ ABSL_GUARDED_BY(mu_);
  absl::Duration handshake_timeout_ ABSL_GUARDED_BY(mu_);
  const uint32_t max_total_;
};

// The caller of a request. `peers` may be null (then credentials are
// unknown and access checks fail closed).
Peer PeerOf(const grpc::CallbackServerContext& context, const PeerTable* peers);

bool MayAccess(const JobAccess& access, const Peer& peer);

// PERMISSION_DENIED naming the job, its owner and how to share it, unless
// MayAccess.
absl::Status CheckAccess(const JobAccess& access, const Peer& peer,
                         std::string_view job_id);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_PEER_H_
