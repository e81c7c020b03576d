// Config: stokerd's settings, from its configuration file (protobuf text
// format, schema stoker.v1.DaemonConfig in proto/stoker/v1/config.proto)
// and from the flags given on its command line, which win.
//
//   auto config = ReadConfigFile("/etc/stoker/stokerd.conf");
//   ApplyFlagOverrides({{"workers", "4"}}, &*config);
//   absl::StatusOr<DaemonOptions> options = ToDaemonOptions(*config);
//
// Every error names where the bad value came from: "path:line:column" for
// the file, "--flag" for the command line.
#ifndef STOKER_DAEMON_SETTINGS_CONFIG_H_
#define STOKER_DAEMON_SETTINGS_CONFIG_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/settings/options.h"
#include "stoker/v1/config.pb.h"

namespace stoker {

inline constexpr char kDefaultConfigPath[] = "/etc/stoker/stokerd.conf";

struct LoadedConfig {
  v1::DaemonConfig config;
  // Field name -> where its value came from ("file:line", "--name").
  std::map<std::string, std::string> origin;
};

// Parses `path`. INVALID_ARGUMENT naming path:line:column and the problem
// (syntax, unknown field, wrong type); NOT_FOUND if it does not exist.
absl::StatusOr<LoadedConfig> ReadConfigFile(const std::string& path);

// Sets each named field from its flag's text ("16G", "a,b" for a list).
// INVALID_ARGUMENT for a name that is not a field or a value that is not
// of its type.
absl::Status ApplyFlagOverrides(
    const std::vector<std::pair<std::string, std::string>>& flags,
    LoadedConfig* config);

// The names of the flags given in `argv` ("--workers=3", "--workers 3",
// "-workers=3"), and whether a name is a DaemonConfig field.
std::vector<std::string> FlagNamesIn(int argc, char** argv);
bool IsConfigField(const std::string& name);

// The settings, one "name: value" line each (stokerd --check_config).
std::string DescribeOptions(const DaemonOptions& options);

// Checks every value and fills DaemonOptions (defaults for fields left
// out). INVALID_ARGUMENT naming the field, its origin and the problem.
absl::StatusOr<DaemonOptions> ToDaemonOptions(const LoadedConfig& config);

}  // namespace stoker

#endif  // STOKER_DAEMON_SETTINGS_CONFIG_H_
