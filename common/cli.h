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

#include <string>
#include <string_view>
#include <vector>

namespace stoker {

// Parses the flags of argv (absl flags) and returns the positional
// arguments, argv[0] first. `main_file` is the file whose ABSL_FLAGs are the
// program's own; it defaults to the caller's file.
std::vector<char*> ParseCommandLine(
    int argc, char** argv, std::string_view usage,
    std::string_view main_file = __builtin_FILE());

// The help text: usage, then each flag defined in `main_file` as
// "--name=default" and its description. Exposed for tests.
std::string HelpText(std::string_view usage, std::string_view main_file);

}  // namespace stoker

#endif  // STOKER_COMMON_CLI_H_
