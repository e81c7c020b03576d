// stokerd: the stoker data-loading daemon.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/log.h"
#include "common/naming.h"
#include "daemon/byte_size.h"
#include "daemon/daemon.h"

ABSL_FLAG(std::string, socket, std::string(stoker::kDaemonDefaultTarget),
          "gRPC address to serve, a Unix socket: unix:///path/to/stoker.sock");
ABSL_FLAG(int, workers, 0,
          "decode worker threads; 0 means one per core minus one");
ABSL_FLAG(uint32_t, max_jobs, 64, "most jobs running at once");
ABSL_FLAG(uint64_t, max_image_pixels, uint64_t{1} << 26,
          "images with more pixels are refused as corrupt (decompression "
          "bomb guard)");
ABSL_FLAG(uint32_t, max_jobs_per_client, 16,
          "most jobs one client may run at once");
ABSL_FLAG(uint32_t, max_leases_per_client, 256,
          "most batches one client may have outstanding (credits plus "
          "unreleased leases, over all its consumers)");
ABSL_FLAG(stoker::ByteSize, shm_budget, stoker::ByteSize{0},
          "shared memory all job rings together may reserve, e.g. 16G; 0 "
          "leaves only /dev/shm's free space as the limit");
ABSL_FLAG(std::vector<std::string>, dataset_roots, {},
          "comma-separated directories datasets must resolve into (after "
          "symlinks and ..); empty allows any path but /proc, /sys and /dev");
ABSL_FLAG(std::string, socket_group, "",
          "group given to the sockets (mode 0660): the users allowed to "
          "connect; empty keeps stokerd's own group");
ABSL_FLAG(absl::Duration, lease_timeout, absl::Minutes(10),
          "a consumer holding one batch longer than this is ended and its "
          "batches go to the next consumer; 0 disables");
ABSL_FLAG(absl::Duration, keepalive, absl::Seconds(10),
          "ping interval and timeout that detect a frozen or vanished client; "
          "0 disables");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "stokerd --socket=unix:///run/stoker/stoker.sock [--workers=N]");
  absl::ParseCommandLine(argc, argv);
  if (absl::Status logging = stoker::InitLogging(absl::GetFlag(FLAGS_log_level));
      !logging.ok()) {
    std::fprintf(stderr, "stokerd: %s\n", std::string(logging.message()).c_str());
    return 2;
  }
  return stoker::RunDaemon({
      .target = absl::GetFlag(FLAGS_socket),
      .workers = absl::GetFlag(FLAGS_workers),
      .max_jobs = absl::GetFlag(FLAGS_max_jobs),
      .max_image_pixels = absl::GetFlag(FLAGS_max_image_pixels),
      .max_jobs_per_client = absl::GetFlag(FLAGS_max_jobs_per_client),
      .max_leases_per_client = absl::GetFlag(FLAGS_max_leases_per_client),
      .shm_budget_bytes = absl::GetFlag(FLAGS_shm_budget).bytes,
      .dataset_roots = absl::GetFlag(FLAGS_dataset_roots),
      .socket_group = absl::GetFlag(FLAGS_socket_group),
      .lease_timeout = absl::GetFlag(FLAGS_lease_timeout),
      .keepalive = absl::GetFlag(FLAGS_keepalive),
  });
}
