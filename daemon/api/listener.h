// Listener: stokerd's two Unix sockets, accepted by the daemon itself.
//
// gRPC over a Unix socket does not tell a service who called, so stokerd
// does not let gRPC listen: the Listener accepts each connection, reads the
// peer's credentials (SO_PEERCRED) into the PeerTable and hands the
// connection to the gRPC server (AddInsecureChannelFromFd); a user at its
// connection limit is refused at once, and about once a second connections
// that made no call in time are shut down (PeerTable::Sweep). Connections to
// the ring socket ("<socket>.ring") ask for a job's shared memory: the
// listener reads them without blocking, many at once, each with one second
// in all to send its request (at most kMaxRingRequestsPerUser per user
// waiting), and passes each whole request to `on_ring`. So no client, slow
// or silent, holds the listener up for anyone else.
//
// Both sockets are created with their final mode (and group) before they
// appear under their names: each is bound under a temporary name, chmod-ed
// and renamed into place, so there is no moment at which the umask's mode
// is visible. Under socket activation systemd made both sockets (with the
// mode and group of deploy/stokerd.socket) and passes them in `inherited`;
// they are then used as they are and left in place on Stop().
//
// Thread-safety: Start() and Stop() from one thread.
#ifndef STOKER_DAEMON_API_LISTENER_H_
#define STOKER_DAEMON_API_LISTENER_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "daemon/api/peer.h"
#include "daemon/api/relay.h"
#include "daemon/api/ring_requests.h"

namespace stoker {

// Binds and listens on a Unix socket at `path` with permission bits `mode`
// and, if given, group `group`; returns the listening descriptor.
absl::StatusOr<UniqueFd> ListenUnix(const std::string& path, mode_t mode,
                                    std::optional<gid_t> group);

class Listener {
 public:
  using RingHandler =
      std::function<void(int fd, const PeerCredentials& credentials,
                         const absl::StatusOr<RingQuery>& query)>;
  static constexpr uint32_t kMaxRingRequestsPerUser = 8;
  static constexpr uint32_t kMaxRingRequests = 1024;

  // `inherited`: listening sockets passed by systemd, by path (see
  // TakeListenFds); either both paths are in it or neither.
  static absl::StatusOr<std::unique_ptr<Listener>> Open(
      const std::string& socket_path, const std::string& ring_path, mode_t mode,
      std::optional<gid_t> group,
      const std::map<std::string, int>& inherited = {});
  ~Listener();  // Stop()

  // Accepts until Stop(): gRPC connections go to `server` (their
  // credentials to `peers`), ring requests to `on_ring`.
  void Start(grpc::Server* server, PeerTable* peers, RingHandler on_ring);
  // Stops accepting, closes and unlinks both sockets. Idempotent.
  void Stop();

 private:
  Listener(std::string socket_path, std::string ring_path, UniqueFd grpc_fd,
           UniqueFd ring_fd, UniqueFd wake_read, UniqueFd wake_write,
           bool owns_paths);
  // A ring connection whose request has not arrived yet.
  struct RingRequest {
    UniqueFd fd;
    PeerCredentials credentials;
    absl::Time deadline;
    std::string received;
  };
  void Run(grpc::Server* server, PeerTable* peers, RingHandler on_ring);
  void AcceptGrpc(grpc::Server* server, PeerTable* peers);
  void AcceptRing(const PeerTable& peers);
  // Reads what `request` has sent; true when it is answered (or dropped).
  bool ReadRing(RingRequest& request, const RingHandler& on_ring);
  uint32_t RingRequestsOf(uid_t uid) const;

  const std::string socket_path_;
  const std::string ring_path_;
  UniqueFd grpc_fd_;
  UniqueFd ring_fd_;
  UniqueFd wake_read_;
  UniqueFd wake_write_;
  const bool owns_paths_;  // false: systemd's sockets, left in place
  // Every gRPC connection goes through it (header blocks bounded).
  std::unique_ptr<ConnectionRelay> relay_;
  std::thread thread_;
  bool stopped_ = false;
  std::vector<RingRequest> ring_requests_;  // the listener thread's own
  static constexpr absl::Duration kTrimEvery = absl::Seconds(5);
  uint64_t trimmed_at_ = 0;  // relay_->closed() at the last malloc_trim
  absl::Time next_trim_ = absl::InfinitePast();
  // When each user was last told to be at its connection limit.
  std::map<uid_t, absl::Time> limit_logged_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_LISTENER_H_
