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

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/naming.h"
#include "daemon/api/client_limits.h"
#include "daemon/api/consume_reactor.h"
#include "daemon/api/listener.h"
#include "daemon/api/loader_service.h"
#include "daemon/api/metrics.h"
#include "daemon/api/peer.h"
#include "daemon/jobs/job_registry.h"
#include "daemon/jobs/worker_pool.h"
#include "daemon/os/instance_lock.h"
#include "daemon/os/path_policy.h"
#include "daemon/os/ticker.h"
#include "daemon/settings/options.h"

namespace stoker {

// What a reload did: one sentence per setting changed, and per setting that
// cannot change while stokerd runs.
struct ReloadReport {
  std::vector<std::string> applied;
  std::vector<std::string> refused;
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
  // The metrics endpoint's port (0 without one).
  int metrics_port() const;

  // Applies what can change at run time (limits, shared-memory budget,
  // dataset roots, lease timeout, log level) from `next`, and refuses the
  // rest, leaving it as it was. A dataset root that does not exist keeps
  // the old roots (refused).
  ReloadReport Reconfigure(const DaemonOptions& next);

 private:
  Daemon(std::string socket_path, InstanceLock lock);
  absl::Status Serve(const DaemonOptions& options);
  // The steps of Serve, in order.
  void RemoveLeftovers(const DaemonOptions& options);
  absl::Status BuildJobs(const DaemonOptions& options, int workers);
  absl::Status StartMetrics(const DaemonOptions& options);
  absl::Status StartServer(const DaemonOptions& options);
  void LogStart(const DaemonOptions& options, int workers);

  const std::string socket_path_;
  const std::string segment_prefix_;
  InstanceLock lock_;
  // Before the jobs, whose indexes hold its entries: it goes after them.
  std::unique_ptr<ShardCache> shard_cache_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<JobRegistry> registry_;
  std::unique_ptr<ConsumerSet> consumers_;
  std::unique_ptr<ClientLimits> limits_;
  std::unique_ptr<LoaderService> service_;
  std::unique_ptr<Ticker> rate_ticker_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<PathPolicy> dataset_paths_;
  std::unique_ptr<PeerTable> peers_;
  std::unique_ptr<Listener> listener_;
  std::unique_ptr<MetricsServer> metrics_;
  const std::chrono::steady_clock::time_point started_ =
      std::chrono::steady_clock::now();
  // Read by the ticker; milliseconds, 0: no limit.
  std::atomic<int64_t> lease_timeout_ms_{0};

  absl::Mutex options_mu_;
  DaemonOptions options_ ABSL_GUARDED_BY(options_mu_);

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  // Serve() got to the end: the daemon did serve.
  bool served_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

// The settings the job registry applies (new jobs' limits, the reaper).
RegistryLimits RegistryLimitsOf(const DaemonOptions& options);

// Runs stokerd until SIGTERM or SIGINT; returns the process exit code. On
// SIGHUP calls `reload` for the new settings (an error is logged and
// changes nothing) and applies them with Reconfigure().
int RunDaemon(const DaemonOptions& options,
              std::function<absl::StatusOr<DaemonOptions>()> reload);

}  // namespace stoker

#endif  // STOKER_DAEMON_DAEMON_H_
