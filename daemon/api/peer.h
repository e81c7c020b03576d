// Who is on the other end of a connection, as the kernel says (SO_PEERCRED),
// and what that peer may see.
//
// stokerd accepts its Unix-socket connections itself (see Listener), reads
// each one's credentials, and records them in a PeerTable under the name
// gRPC gives the connection ("fd:<n>"). Handlers look their caller up with
// PeerOf(context). The SDK's "stoker-client" metadata only labels a client
// for limits and stats; ownership and access are decided by the uid.
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

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/spec/job_config.h"

namespace stoker {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

// A caller: its verified credentials (absent if unknown) and the client
// label its SDK claims.
struct Peer {
  std::optional<PeerCredentials> credentials;
  std::string client;
};

// The credentials of the process at the other end of Unix socket `fd`.
absl::StatusOr<PeerCredentials> ReadPeerCredentials(int fd);

class PeerTable {
 public:
  // Records the credentials of the connection on `fd` (replacing those of
  // an earlier, closed connection that had the same descriptor number).
  void Set(int fd, const PeerCredentials& credentials);
  // The credentials for a gRPC peer string ("fd:<n>").
  std::optional<PeerCredentials> Find(std::string_view peer) const;

 private:
  mutable absl::Mutex mu_;
  std::map<int, PeerCredentials> by_fd_ ABSL_GUARDED_BY(mu_);
};

// The caller of a request. `peers` may be null (then credentials are
// unknown and access checks fail closed).
Peer PeerOf(const grpc::CallbackServerContext& context, const PeerTable* peers);

bool MayAccess(const JobAccess& access, const Peer& peer);

// PERMISSION_DENIED naming the job, its owner and how to share it, unless
// MayAccess.
absl::Status CheckAccess(const JobAccess& access, const Peer& peer,
                         std::string_view job_id);

// A group name (or a number) -> gid; INVALID_ARGUMENT if unknown.
absl::StatusOr<gid_t> ResolveGroup(std::string_view name);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_PEER_H_
