// The command line of stoker's programs (stokerd, stokerctl, the example
// trainer, the benchmark tools): one way to parse flags and to ask for help.
//
//   int main(int argc, char** argv) {
//     std::vector<char*> args = stoker::ParseCommandLine(argc, argv, kUsage);
//     ...
//   }
//
// `--help` (or `-h`) prints the usage text and the program's own flags (those
// defined in the file that calls this, normally its main.cc) with their
// defaults, then exits 0; `--helpfull` lists every flag, the libraries' too;
// `--version` prints the program's name and stoker's version.
#ifndef STOKER_COMMON_CLI_H_
#define STOKER_COMMON_CLI_H_

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace stoker {

// Parses the flags of argv (absl flags) and returns the positional
// arguments, argv[0] first. `main_file` is the file whose ABSL_FLAGs are the
// program's own; it defaults to the caller's file.
std::vector<char*> ParseCommandLine(
    int argc, char** argv, std::string_view usage,
    std::string_view main_file = __builtin_FILE());

// A flag that the program reads itself, not through absl (stokerd's
// settings, which come from one table): listed by --help like the others.
struct OwnFlag {
  std::string name;
  std::string default_value;
  std::string help;
};
// ParseCommandLine, with `own` flags listed by --help. The program must take
// them out of argv before (see TakeFlags).
std::vector<char*> ParseCommandLine(
    int argc, char** argv, std::string_view usage,
    const std::vector<OwnFlag>& own,
    std::string_view main_file = __builtin_FILE());

// Removes from argv (compacting it, updating *argc) every flag whose name
// `is_own` accepts, "--name=value", "-name=value" or "--name value", and
// returns them as (name, value) in order. INVALID_ARGUMENT for such a flag
// without a value.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> TakeFlags(
    int* argc, char** argv,
    const std::function<bool(std::string_view)>& is_own);

// The help text: usage, then each flag defined in `main_file` (and each of
// `own`) as "--name=default" and its description. Exposed for tests.
std::string HelpText(std::string_view usage, std::string_view main_file,
                     const std::vector<OwnFlag>& own = {});

}  // namespace stoker

#endif  // STOKER_COMMON_CLI_H_
