#include "daemon/daemon.h"

#include <grpc/grpc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "daemon/api/ring_requests.h"
#include "daemon/api/stats.h"
#include "daemon/os/byte_size.h"
#include "daemon/os/group.h"
#include "daemon/os/sd_notify.h"
#include "daemon/settings/preflight.h"
#include "daemon/settings/settings.h"
#include "daemon/shm/shm_segment.h"

namespace stoker {
namespace {

absl::Status PrepareSocketDirectory(const std::string& socket_path) {
  const std::filesystem::path dir =
      std::filesystem::path(socket_path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot create socket directory ", dir.string(), ": ", ec.message()));
    }
  }
  return absl::OkStatus();
}

// Removes what a dead predecessor left at `path`, if it is a socket; the
// preflight refused to start over anything else.
void RemoveStaleSocket(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    ::unlink(path.c_str());
  }
}

// Largest request message accepted (a JobSpec with a long pipeline is a few
// KiB).
constexpr int kMaxRequestBytes = 64 << 10;
constexpr int kMaxMetadataBytes = 16 << 10;
// Calls in flight on one connection (a trainer has one Consume stream per
// consumer and a few unary calls at a time). What the calls' answers may
// hold is bounded per user by LoaderService (answers.h).
constexpr int kMaxStreamsPerConnection = 256;

int DefaultWorkers() {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return cores > 1 ? cores - 1 : 1;
}

// SIGHUP: re-reads the settings and applies what may change.
void Reload(Daemon& daemon,
            const std::function<absl::StatusOr<DaemonOptions>()>& reload) {
  absl::StatusOr<DaemonOptions> next = reload();
  if (!next.ok()) {
    spdlog::error("reload refused, nothing changed: {}",
                  next.status().message());
    return;
  }
  const ReloadReport report = daemon.Reconfigure(*next);
  for (const std::string& line : report.applied) {
    spdlog::info("reload: {}", line);
  }
  for (const std::string& line : report.refused) {
    spdlog::warn("reload: {}", line);
  }
  if (report.applied.empty() && report.refused.empty()) {
    spdlog::info("reload: nothing changed");
  }
}

// Raises the soft descriptor limit to the hard one and returns how many
// client connections stokerd takes in all: half of its descriptors, so that
// connections can never starve the workers and rings of theirs.
uint32_t ConnectionBudget() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 512;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
    (void)::getrlimit(RLIMIT_NOFILE, &limit);
  }
  // Three descriptors a connection (the client's, and the relay's socket
  // pair), and room for rings and dataset files.
  return static_cast<uint32_t>(
      std::min<rlim_t>(limit.rlim_cur / 4, uint32_t{1} << 20));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(
    const DaemonOptions& options) {
  // Keep gRPC initialized for the life of the process. Otherwise destroying
  // the last server runs gRPC's global teardown, which joins an executor
  // thread that may sit out a keepalive timer first: stopping took up to
  // --keepalive longer.
  static std::once_flag grpc_kept;
  std::call_once(grpc_kept, [] { grpc_init(); });
  const std::string socket_path = SocketPathFromTarget(options.target);
  if (socket_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--socket '", options.target,
        "' is not a Unix socket address (unix:///path/to/stoker.sock)"));
  }
  STOKER_RETURN_IF_ERROR(CheckAgainstMachine(options));
  STOKER_RETURN_IF_ERROR(PrepareSocketDirectory(socket_path));
  STOKER_ASSIGN_OR_RETURN(InstanceLock lock,
                          InstanceLock::Acquire(socket_path));
  std::unique_ptr<Daemon> daemon(new Daemon(socket_path, std::move(lock)));
  STOKER_RETURN_IF_ERROR(daemon->Serve(options));
  return daemon;
}

Daemon::Daemon(std::string socket_path, InstanceLock lock)
    : socket_path_(std::move(socket_path)),
      segment_prefix_(SegmentPrefix(socket_path_)),
      lock_(std::move(lock)) {}

absl::Status Daemon::Serve(const DaemonOptions& options) {
  {
    absl::MutexLock lock(&options_mu_);
    options_ = options;
  }
  lease_timeout_ms_ = absl::ToInt64Milliseconds(options.lease_timeout);
  RemoveLeftovers(options);
  std::optional<gid_t> socket_group;
  if (!options.socket_group.empty()) {
    auto gid = ResolveGroup(options.socket_group);
    if (!gid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--socket_group: ", gid.status().message()));
    }
    socket_group = *gid;
  }
  const int workers = options.workers > 0 ? options.workers : DefaultWorkers();
  STOKER_RETURN_IF_ERROR(BuildJobs(options, workers));
  STOKER_ASSIGN_OR_RETURN(
      listener_, Listener::Open(socket_path_, RingSocketPath(socket_path_),
                                0660, socket_group, options.inherited_sockets));
  STOKER_RETURN_IF_ERROR(StartMetrics(options));
  STOKER_RETURN_IF_ERROR(StartServer(options));
  LogStart(options, workers);
  return absl::OkStatus();
}

void Daemon::RemoveLeftovers(const DaemonOptions& options) {
  // We hold the lock: whatever sits at our names belongs to a dead
  // predecessor (unless systemd holds them for us: socket activation).
  if (options.inherited_sockets.empty()) {
    RemoveStaleSocket(socket_path_);
    RemoveStaleSocket(RingSocketPath(socket_path_));
  }
  if (const int removed = RemoveSegments(segment_prefix_); removed > 0) {
    spdlog::warn(
        "removed {} shared-memory segments left by a previous "
        "stokerd on {}",
        removed, socket_path_);
  }
}

absl::Status Daemon::BuildJobs(const DaemonOptions& options, int workers) {
  STOKER_ASSIGN_OR_RETURN(PathPolicy paths,
                          PathPolicy::Create(options.dataset_roots));
  dataset_paths_ = std::make_unique<PathPolicy>(std::move(paths));
  pool_ = std::make_unique<WorkerPool>(
      workers,
      DecodeLimits{.max_pixels = options.max_image_pixels,
                   .max_scratch_bytes = options.max_worker_scratch_bytes},
      dataset_paths_.get());
  if (!options.cache_dir.empty()) {
    STOKER_ASSIGN_OR_RETURN(
        shard_cache_,
        ShardCache::Open(options.cache_dir, options.cache_size_bytes,
                         options.cache_size_per_user_bytes != 0
                             ? options.cache_size_per_user_bytes
                             : options.cache_size_bytes / 2));
  }
  registry_ = std::make_unique<JobRegistry>(
      RegistryOptions{.segment_prefix = segment_prefix_,
                      .segment_mode = 0600,
                      .dataset_paths = dataset_paths_.get(),
                      .shard_cache = shard_cache_.get(),
                      .remote_ca_file = options.remote_ca_file,
                      .limits = RegistryLimitsOf(options)},
      pool_.get());
  peers_ = std::make_unique<PeerTable>(options.max_connections_per_user,
                                       options.handshake_timeout,
                                       ConnectionBudget());
  consumers_ = std::make_unique<ConsumerSet>(options.keepalive);
  limits_ = std::make_unique<ClientLimits>(options.max_leases_per_user);
  service_ = std::make_unique<LoaderService>(registry_.get(), pool_.get(),
                                             consumers_.get(), limits_.get(),
                                             peers_.get());
  rate_ticker_ = std::make_unique<Ticker>(absl::Milliseconds(500), [this] {
    const absl::Time now = absl::Now();
    const absl::Duration lease_timeout =
        absl::Milliseconds(lease_timeout_ms_.load());
    pool_->SampleRates(now);
    for (const auto& job : registry_->List()) {
      job->SampleRates(now);
      job->Tick(now, lease_timeout);
    }
    registry_->Reap(now);
  });
  return absl::OkStatus();
}

absl::Status Daemon::StartMetrics(const DaemonOptions& options) {
  if (options.metrics_address.empty()) return absl::OkStatus();
  STOKER_ASSIGN_OR_RETURN(metrics_, MetricsServer::Start(
                                        options.metrics_address,
                                        [this] {
                                          v1::Stats stats;
                                          CollectStats(*pool_, *registry_,
                                                       started_, {}, &stats);
                                          return stats;
                                        },
                                        options.metrics_names));
  if (!options.metrics_address.starts_with("127.") &&
      !options.metrics_address.starts_with("localhost:") &&
      !options.metrics_address.starts_with("[::1]:")) {
    spdlog::warn(
        "metrics on {} are not limited to loopback: job ids (and, with "
        "metrics_labels: names, job names) are visible to whoever reaches "
        "that address",
        options.metrics_address);
  }
  return absl::OkStatus();
}

absl::Status Daemon::StartServer(const DaemonOptions& options) {
  // The standard grpc.health.v1 service: SERVING until stokerd drains.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // No listening port: the Listener accepts connections and hands them to
  // the server, so that each one's peer credentials are known.
  builder.RegisterService(service_.get());
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  // A request's metadata is a few hundred bytes. (A header block that
  // never ends, which gRPC 1.51 would buffer without bound, is cut off
  // before gRPC by the listener's relay: relay.h.)
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, kMaxMetadataBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             kMaxStreamsPerConnection);
  const int keepalive_ms =
      static_cast<int>(absl::ToInt64Milliseconds(options.keepalive));
  if (keepalive_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, keepalive_ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, keepalive_ms);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot start the gRPC server for ", socket_path_));
  }
  listener_->Start(
      server_.get(), peers_.get(),
      [registry = registry_.get()](int fd, const PeerCredentials& credentials,
                                   const absl::StatusOr<RingQuery>& query) {
        AnswerRingRequest(fd, credentials, query, *registry);
      });
  return absl::OkStatus();
}

void Daemon::LogStart(const DaemonOptions& options, int workers) {
  if (options.dataset_roots.empty()) {
    spdlog::warn(
        "no --dataset_roots: clients may name any directory stokerd "
        "can read (but /proc, /sys and /dev)");
  }
  spdlog::info(
      "stokerd {} listening on {}{} with {} workers (shared-memory "
      "budget {}, {} free in /dev/shm)",
      kVersion, socket_path_,
      options.inherited_sockets.empty() ? "" : " (socket activation)", workers,
      FormatByteSize(registry_->shm_budget_bytes()),
      FormatByteSize(FreeBytes("/dev/shm") & ~uint64_t{1023}));
  {
    absl::MutexLock lock(&shutdown_mu_);
    served_ = true;
  }
  if (metrics_ != nullptr) {
    spdlog::info(
        "metrics on http://{}:{}/metrics",
        options.metrics_address.substr(0, options.metrics_address.rfind(':')),
        metrics_->port());
  }
}

Daemon::~Daemon() { Shutdown(); }

int Daemon::metrics_port() const {
  return metrics_ != nullptr ? metrics_->port() : 0;
}

bool Daemon::Responsive() {
  // Takes (and lets go of) the registry's and the pool's locks.
  (void)registry_->List();
  (void)pool_->busy_percent();
  return true;
}

void Daemon::Shutdown() {
  bool served = false;
  {
    absl::MutexLock lock(&shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
    served = served_;
  }
  // No new connections; then end what runs.
  if (server_ != nullptr && server_->GetHealthCheckService() != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(false);
  }
  if (listener_ != nullptr) listener_->Stop();
  metrics_.reset();
  const absl::Status why = absl::UnavailableError("stokerd is shutting down");
  if (registry_ != nullptr) registry_->CloseAll(why);
  if (consumers_ != nullptr) consumers_->ShutdownAll(why);
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::seconds(2));
    server_->Wait();
  }
  rate_ticker_.reset();
  service_.reset();
  if (pool_ != nullptr) pool_->Stop();
  registry_.reset();
  RemoveSegments(segment_prefix_);
  // A start that failed half-way says only "cannot start", once.
  if (served) spdlog::info("stokerd on {} stopped", socket_path_);
}

int RunDaemon(const DaemonOptions& options,
              std::function<absl::StatusOr<DaemonOptions>()> reload) {
  // Block the stop signals before any thread starts so every thread inherits
  // the mask and only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  auto daemon = Daemon::Start(options);
  if (!daemon.ok()) {
    spdlog::critical("stokerd cannot start: {}", daemon.status().message());
    (void)SdNotify(
        absl::StrCat("STATUS=cannot start: ", daemon.status().message()));
    return 1;
  }
  // Under systemd (Type=notify): ready only now that the sockets listen.
  if (absl::Status ready = SdNotify(
          absl::StrCat("READY=1\nSTATUS=serving ", (*daemon)->socket_path()));
      !ready.ok()) {
    spdlog::warn("{}", ready.message());
  }
  std::unique_ptr<Ticker> watchdog;
  if (const std::optional<absl::Duration> every = WatchdogInterval()) {
    // Pinged only while the daemon's locks answer, so that a deadlocked
    // daemon is restarted by systemd.
    watchdog = std::make_unique<Ticker>(*every, [d = daemon->get()] {
      if (d->Responsive()) (void)SdNotify("WATCHDOG=1");
    });
  }
  int signal_number = 0;
  while (sigwait(&stop_signals, &signal_number) == 0 &&
         signal_number == SIGHUP) {
    (void)SdNotify("RELOADING=1");
    Reload(**daemon, reload);
    (void)SdNotify(
        absl::StrCat("READY=1\nSTATUS=serving ", (*daemon)->socket_path()));
  }
  spdlog::info("received {}, draining", strsignal(signal_number));
  (void)SdNotify("STOPPING=1");
  watchdog.reset();
  (*daemon)->Shutdown();
  return 0;
}

}  // namespace stoker
