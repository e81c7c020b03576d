#include "common/cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/version.h"

namespace stoker {
namespace {

bool IsHelpRequest(std::string_view arg) {
  return arg == "-h" || arg == "--help" || arg == "-help" ||
         arg == "--helpshort" || arg == "-helpshort";
}

// `text` wrapped at about 72 columns, each line indented by six spaces.
std::string Indented(const std::string& text) {
  std::string out = "      ";
  size_t column = 0;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > 0 && column + 1 + word.size() > 72) {
      absl::StrAppend(&out, "\n      ");
      column = 0;
    } else if (column > 0) {
      out += ' ';
      ++column;
    }
    absl::StrAppend(&out, word);
    column += word.size();
  }
  return out;
}

// The same file whether or not a leading "/" or "./" was kept (absl's flag
// registry may store either).
bool SameFile(std::string_view a, std::string_view b) {
  const auto trim = [](std::string_view f) {
    while (f.starts_with("./") || f.starts_with("/")) {
      f.remove_prefix(f.starts_with("./") ? 2 : 1);
    }
    return f;
  };
  return trim(a) == trim(b);
}

}  // namespace

std::string HelpText(std::string_view usage, std::string_view main_file,
                     const std::vector<OwnFlag>& own) {
  std::vector<OwnFlag> flags = own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (SameFile(flag->Filename(), main_file)) {
      flags.push_back(
          {std::string(flag->Name()), flag->DefaultValue(), flag->Help()});
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::string text = absl::StrCat("usage: ", std::string(usage), "\n");
  if (!flags.empty()) absl::StrAppend(&text, "\nFlags (default after =):\n");
  for (const OwnFlag& flag : flags) {
    const std::string value =
        flag.default_value.empty() ? "\"\"" : flag.default_value;
    absl::StrAppend(&text, "  --", flag.name, "=", value, "\n",
                    Indented(flag.help), "\n");
  }
  absl::StrAppend(&text,
                  "\n--helpfull lists every flag, including the libraries'; "
                  "--version prints the version.\n");
  return text;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> TakeFlags(
    int* argc, char** argv,
    const std::function<bool(std::string_view)>& is_own) {
  std::vector<std::pair<std::string, std::string>> taken;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {  // the rest is positional
      while (i < *argc) argv[kept++] = argv[i++];
      break;
    }
    std::string_view name = arg;
    if (name.starts_with('-'))
      name.remove_prefix(name.starts_with("--") ? 2 : 1);
    const size_t equals = name.find('=');
    if (!arg.starts_with('-') || !is_own(name.substr(0, equals))) {
      argv[kept++] = argv[i];
      continue;
    }
    if (equals != std::string_view::npos) {
      taken.emplace_back(name.substr(0, equals), name.substr(equals + 1));
    } else if (i + 1 < *argc) {
      taken.emplace_back(name, argv[++i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", std::string(name), " needs a value (--",
                       std::string(name), "=VALUE)"));
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return taken;
}

std::vector<char*> ParseCommandLine(int argc, char** argv,
                                    std::string_view usage,
                                    std::string_view main_file) {
  return ParseCommandLine(argc, argv, usage, {}, main_file);
}

std::vector<char*> ParseCommandLine(int argc, char** argv,
                                    std::string_view usage,
                                    const std::vector<OwnFlag>& own,
                                    std::string_view main_file) {
  absl::SetProgramUsageMessage(std::string(usage));
  const std::string file(main_file);
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = [file](absl::string_view f) {
    return SameFile(std::string_view(f.data(), f.size()), file);
  };
  config.contains_help_flags = config.contains_helpshort_flags;
  std::string program = argc > 0 ? argv[0] : "stoker";
  program = program.substr(program.rfind('/') + 1);
  config.version_string = [program] {
    return absl::StrCat(program, " ", kVersion, "\n");
  };
  absl::SetFlagsUsageConfig(config);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (IsHelpRequest(arg)) {
      std::fputs(HelpText(usage, file, own).c_str(), stdout);
      std::exit(0);
    }
  }
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace stoker
