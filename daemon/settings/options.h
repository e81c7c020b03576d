// DaemonOptions: every setting of a stokerd, as the daemon applies it (the
// flags and the configuration file are read into it by
// daemon/settings/config.h).
#ifndef STOKER_DAEMON_SETTINGS_OPTIONS_H_
#define STOKER_DAEMON_SETTINGS_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/naming.h"

namespace stoker {

struct DaemonOptions {
  std::string target = std::string(kDaemonDefaultTarget);
  int workers = 0;  // 0: one per core but one, at least one
  uint32_t max_jobs = 64;
  uint64_t max_image_pixels = uint64_t{1} << 26;
  uint32_t max_jobs_per_user = 16;
  uint32_t max_leases_per_user = 256;
  // 0: half of /dev/shm's size, and half of the budget.
  uint64_t shm_budget_bytes = 0;
  uint64_t shm_budget_per_user_bytes = 0;
  // Dataset scans: most images, longest scan.
  uint64_t max_dataset_samples = uint64_t{1} << 24;
  absl::Duration scan_timeout = absl::Minutes(5);
  // Remote shards: the node-local shard cache (empty: no remote shards),
  // its size bound, and the longest one job's fetch may take.
  std::string cache_dir;
  uint64_t cache_size_bytes = uint64_t{16} << 30;
  uint64_t cache_size_per_user_bytes = 0;  // 0: half of cache_size
  absl::Duration fetch_timeout = absl::Minutes(30);
  // Certificates (PEM) that https:// fetches trust instead of the system's
  // (a store behind a private CA); empty: the system's.
  std::string remote_ca_file;
  // The dataset indexes one user's jobs may hold (0: no limit).
  uint64_t max_index_bytes_per_user = uint64_t{2} << 30;
  // The most bytes one sample's value of a bytes field may hold.
  uint64_t max_field_bytes = uint64_t{64} << 10;
  // A running job with no consumer for this long is ended; an ended job is
  // forgotten this long after it ended. Zero: never.
  absl::Duration orphan_timeout = absl::Minutes(5);
  absl::Duration ended_job_ttl = absl::Minutes(10);
  // A worker frees its decode buffers when they hold more than this.
  uint64_t max_worker_scratch_bytes = uint64_t{64} << 20;
  // Connections one user may hold open, and how soon a new connection must
  // make its first call.
  uint32_t max_connections_per_user = 64;
  absl::Duration handshake_timeout = absl::Seconds(10);
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
  // Prometheus metrics over HTTP at host:port ("127.0.0.1:9464"; port 0
  // picks one); empty: none.
  std::string metrics_address;
  // Per-job series labelled with the names users gave jobs and consumers
  // too ("metrics_labels: names"); by default with ids only.
  bool metrics_names = false;
  // The memory limit the shared-memory budget must fit under; unset: the
  // cgroup's (memory.max), read at start and on every reload. Not a
  // setting: tests give it.
  std::optional<uint64_t> memory_limit;
  // trace, debug, info, warn, error or off (InitLogging applies it; kept
  // here so that a reload can change it).
  std::string log_level = "info";
  // Listening sockets passed by systemd socket activation, by path (both
  // the socket's and the ring socket's, or none).
  std::map<std::string, int> inherited_sockets;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_SETTINGS_OPTIONS_H_
