// Daemon: one running stokerd, from socket to worker threads.
//
// Start() takes the socket's instance lock, removes what a previous daemon on
// the same socket left behind (socket file, shared-memory segments), starts
// the worker pool and serves the Loader API. Shutdown() drains: refuses new
// work, ends every Consume stream with UNAVAILABLE, stops the server and the
// workers, unlinks every segment and removes the socket.
//
//   auto daemon = Daemon::Start({.target = "unix:///tmp/x.sock"});
//   if (!daemon.ok()) { ... }
//   (*daemon)->Shutdown();
//
// Thread-safety: Shutdown() may be called from any thread, more than once.
#ifndef STOKER_DAEMON_DAEMON_H_
#define STOKER_DAEMON_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/naming.h"
#include "daemon/client_limits.h"
#include "daemon/consume_reactor.h"
#include "daemon/instance_lock.h"
#include "daemon/job_registry.h"
#include "daemon/listener.h"
#include "daemon/path_policy.h"
#include "daemon/peer.h"
#include "daemon/loader_service.h"
#include "daemon/ticker.h"
#include "daemon/worker_pool.h"

namespace stoker {

struct DaemonOptions {
  std::string target = std::string(kDaemonDefaultTarget);
  int workers = 0;  // 0: one per core but one, at least one
  uint32_t max_jobs = 64;
  uint64_t max_image_pixels = uint64_t{1} << 26;
  uint32_t max_jobs_per_client = 16;
  uint32_t max_leases_per_client = 256;
  uint64_t shm_budget_bytes = 0;  // 0: /dev/shm's free space is the limit
  // Directories datasets must resolve into; empty: anywhere but /proc,
  // /sys and /dev.
  std::vector<std::string> dataset_roots;
  // Group given to the sockets (mode 0660); empty: the daemon's own group.
  std::string socket_group;
  // A consumer holding one batch longer than this is ended and its batches
  // go to the next consumer; zero: no limit.
  absl::Duration lease_timeout = absl::Minutes(10);
  // HTTP/2 keepalive: a connection that does not answer a ping sent every
  // `keepalive` within another `keepalive` is closed, and its leases
  // reclaimed (a frozen or vanished client).
  absl::Duration keepalive = absl::Seconds(10);
};

class Daemon {
 public:
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(
      const DaemonOptions& options);
  ~Daemon();

  void Shutdown();
  // Returns once the registry and the worker pool have answered (it hangs
  // if one of them is deadlocked): what the systemd watchdog pings check.
  bool Responsive();
  const std::string& socket_path() const { return socket_path_; }
  std::string target() const { return "unix://" + socket_path_; }
  const std::string& segment_prefix() const { return segment_prefix_; }

 private:
  Daemon(std::string socket_path, InstanceLock lock);
  absl::Status Serve(const DaemonOptions& options);

  const std::string socket_path_;
  const std::string segment_prefix_;
  InstanceLock lock_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<ConsumerSet> consumers_;
  std::unique_ptr<ClientLimits> limits_;
  std::unique_ptr<LoaderService> service_;
  std::unique_ptr<Ticker> sampler_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<PathPolicy> dataset_paths_;
  std::unique_ptr<PeerTable> peers_;
  std::unique_ptr<Listener> listener_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

// Runs stokerd until SIGTERM or SIGINT; returns the process exit code.
int RunDaemon(const DaemonOptions& options);

}  // namespace stoker

#endif  // STOKER_DAEMON_DAEMON_H_
