// stokerd: the stoker data-loading daemon.
#include <cstdint>
#include <cstdio>
#include <utility>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "common/cli.h"
#include "common/log.h"
#include "common/naming.h"
#include "daemon/os/byte_size.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/preflight.h"
#include "daemon/os/sd_listen.h"

ABSL_FLAG(std::string, socket, std::string(stoker::kDaemonDefaultTarget),
          "the Unix socket to serve: a path, unix:PATH or unix://PATH; the "
          "ring socket is PATH.ring beside it");
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
ABSL_FLAG(std::string, metrics_address, "",
          "serve Prometheus metrics over HTTP at host:port (GET /metrics), "
          "e.g. 127.0.0.1:9464; empty: off");
ABSL_FLAG(std::string, config, stoker::kDefaultConfigPath,
          "configuration file (protobuf text format, stoker.v1.DaemonConfig); "
          "each of its fields is the flag of the same name, and flags given on the command "
          "line win; a missing default file is no error; empty: none");
ABSL_FLAG(bool, check_config, false,
          "check the configuration file and flags, print the settings and "
          "exit (0 if valid)");

namespace {

// The settings: the file (if any), then the flags given on the command
// line. Called at start and on every SIGHUP.
absl::StatusOr<stoker::DaemonOptions> LoadSettings(
    const std::string& path, bool path_given,
    const std::vector<std::pair<std::string, std::string>>& flags) {
  stoker::LoadedConfig config;
  if (!path.empty()) {
    auto file = stoker::ReadConfigFile(path);
    if (file.ok()) {
      config = *std::move(file);
    } else if (!absl::IsNotFound(file.status()) || path_given) {
      return file.status();
    }
  }
  if (absl::Status flagged = stoker::ApplyFlagOverrides(flags, &config);
      !flagged.ok()) {
    return flagged;
  }
  absl::StatusOr<stoker::DaemonOptions> options =
      stoker::ToDaemonOptions(config);
  if (!options.ok()) return options;
  // What start would refuse, --check_config and a reload refuse too.
  if (absl::Status machine = stoker::CheckAgainstMachine(*options);
      !machine.ok()) {
    return machine;
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  stoker::ParseCommandLine(
      argc, argv,
      "stokerd [--config=/etc/stoker/stokerd.conf] [--check_config] "
      "[--socket=/run/stoker/stoker.sock] [--workers=N] ...\n\n"
      "The stoker data-loading daemon: decodes and augments images into "
      "shared memory and serves batches to trainers. Every flag can also be "
      "set in the configuration file; flags given here win.");
  // Flags given on the command line override the file, now and on reload.
  std::vector<std::pair<std::string, std::string>> flags;
  bool path_given = false;
  for (const std::string& name : stoker::FlagNamesIn(argc, argv)) {
    path_given |= name == "config";
    if (!stoker::IsConfigField(name)) continue;
    flags.emplace_back(name,
                       absl::FindCommandLineFlag(name)->CurrentValue());
  }
  const std::string path = absl::GetFlag(FLAGS_config);
  auto options = LoadSettings(path, path_given, flags);
  if (!options.ok()) {
    std::fprintf(stderr, "stokerd: %s\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  if (absl::GetFlag(FLAGS_check_config)) {
    std::printf("%s: valid\n%s", path.empty() ? "flags" : path.c_str(),
                stoker::DescribeOptions(*options).c_str());
    return 0;
  }
  if (absl::Status logging = stoker::InitLogging(options->log_level);
      !logging.ok()) {
    std::fprintf(stderr, "stokerd: %s\n",
                 std::string(logging.message()).c_str());
    return 2;
  }
  auto inherited = stoker::TakeListenFds();
  if (!inherited.ok()) {
    std::fprintf(stderr, "stokerd: %s\n",
                 std::string(inherited.status().message()).c_str());
    return 2;
  }
  options->inherited_sockets = *std::move(inherited);
  return stoker::RunDaemon(*options, [path, path_given, flags] {
    return LoadSettings(path, path_given, flags);
  });
}
