// DaemonOptions: every setting of a stokerd, as the daemon applies it (the
// flags and the configuration file are read into it by daemon/config.h).
#ifndef STOKER_DAEMON_OPTIONS_H_
#define STOKER_DAEMON_OPTIONS_H_

#include <cstdint>
#include <map>
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
  // Prometheus metrics over HTTP at host:port ("127.0.0.1:9464"; port 0
  // picks one); empty: none.
  std::string metrics_address;
  // trace, debug, info, warn, error or off (InitLogging applies it; kept
  // here so that a reload can change it).
  std::string log_level = "info";
  // Listening sockets passed by systemd socket activation, by path (both
  // the socket's and the ring socket's, or none).
  std::map<std::string, int> inherited_sockets;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_OPTIONS_H_
