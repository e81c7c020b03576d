// stokerd: the stoker data-loading daemon.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/cli.h"
#include "common/log.h"
#include "common/naming.h"
#include "daemon/daemon.h"
#include "daemon/os/sd_listen.h"
#include "daemon/settings/config.h"
#include "daemon/settings/preflight.h"
#include "daemon/settings/settings.h"

// The settings (--socket, --workers, ...) are not absl flags: they come
// from the table in daemon/settings/settings.cc, like the file's fields.
ABSL_FLAG(std::string, config, stoker::kDefaultConfigPath,
          "configuration file (protobuf text format, stoker.v1.DaemonConfig); "
          "each of its fields is the flag of the same name, and flags given on "
          "the command "
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

// The settings as flags, for --help.
std::vector<stoker::OwnFlag> SettingFlags() {
  std::vector<stoker::OwnFlag> flags;
  for (const stoker::Setting& setting : stoker::Settings()) {
    std::string help(setting.help);
    if (*setting.default_note != '\0') {
      absl::StrAppend(&help, "; default: ", setting.default_note);
    }
    if (setting.reloadable) absl::StrAppend(&help, " (reloadable)");
    flags.push_back(
        {std::string(setting.name), stoker::DefaultText(setting), help});
  }
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  // Flags given on the command line override the file, now and on reload.
  auto flags = stoker::TakeFlags(&argc, argv, [](std::string_view name) {
    return stoker::FindSetting(name) != nullptr;
  });
  stoker::ParseCommandLine(
      argc, argv,
      "stokerd [--config=/etc/stoker/stokerd.conf] [--check_config] "
      "[--socket=/run/stoker/stoker.sock] [--workers=N] ...\n\n"
      "The stoker data-loading daemon: decodes and augments images into "
      "shared memory and serves batches to trainers. Every flag but --config "
      "and --check_config can also be set in the configuration file; flags "
      "given here win.",
      SettingFlags());
  if (!flags.ok()) {
    std::fprintf(stderr, "stokerd: %s\n",
                 std::string(flags.status().message()).c_str());
    return 2;
  }
  bool path_given = false;
  for (const std::string& name : stoker::FlagNamesIn(argc, argv)) {
    path_given |= name == "config";
  }
  const std::string path = absl::GetFlag(FLAGS_config);
  auto options = LoadSettings(path, path_given, *flags);
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
  return stoker::RunDaemon(*options, [path, path_given, flags = *flags] {
    return LoadSettings(path, path_given, flags);
  });
}
