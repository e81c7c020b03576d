#include "daemon/settings/config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/check.h"
#include "common/naming.h"
#include "daemon/settings/settings.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace stoker {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Reflection;

// Keeps the first error of the parser, as "path:line:column: message".
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstError(std::string path) : path_(std::move(path)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    line_ = line;
    error_ = absl::StrCat(path_, ":", line + 1, ":", column + 1, ": ", message);
  }
  // The error, with the field named if the faulty line starts with one.
  std::string Describe(const std::string& text) const {
    if (error_.empty()) return absl::StrCat(path_, ": cannot be parsed");
    std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
    if (line_ < 0 || line_ >= static_cast<int>(lines.size())) return error_;
    absl::string_view field = absl::StripLeadingAsciiWhitespace(lines[line_]);
    size_t end = 0;
    while (end < field.size() &&
           (absl::ascii_isalnum(field[end]) || field[end] == '_')) {
      ++end;
    }
    if (end == 0) return error_;
    const size_t colon = error_.find(": ", path_.size());
    return absl::StrCat(error_.substr(0, colon + 2),
                        std::string(field.substr(0, end)), ": ",
                        error_.substr(colon + 2));
  }

 private:
  const std::string path_;
  std::string error_;
  int line_ = -1;
};

absl::Status FieldError(const LoadedConfig& config, const std::string& field,
                        const std::string& problem) {
  auto it = config.origin.find(field);
  const std::string where =
      it != config.origin.end() ? it->second : "(default)";
  // A flag names the field itself: "--workers: ...", "file:3: workers: ...".
  if (where.starts_with("--")) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", problem));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": ", field, ": ", problem));
}

// The value of `field` in `message` as text (lists comma-separated), or
// nothing if it is not set.
std::optional<std::string> FieldText(const v1::DaemonConfig& message,
                                     const FieldDescriptor* field) {
  const Reflection* reflection = message.GetReflection();
  if (field->is_repeated()) {
    if (reflection->FieldSize(message, field) == 0) return std::nullopt;
    std::vector<std::string> items;
    for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
      items.push_back(reflection->GetRepeatedString(message, field, i));
    }
    return absl::StrJoin(items, ",");
  }
  if (!reflection->HasField(message, field)) return std::nullopt;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(reflection->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(reflection->GetUInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(reflection->GetUInt64(message, field));
    default:
      return reflection->GetString(message, field);
  }
}

// `line` with an unquoted value of a string field that starts with a digit
// (`shm_budget: 16G`, `lease_timeout: 10m`) put in quotes: protobuf's text
// format needs them, and its own error ("Need space between number and
// identifier") does not say so. Anything else is returned as it is.
std::string QuoteBareValue(absl::string_view line) {
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return std::string(line);
  const std::string name(absl::StripAsciiWhitespace(line.substr(0, colon)));
  const FieldDescriptor* field =
      v1::DaemonConfig::descriptor()->FindFieldByName(name);
  if (field == nullptr ||
      field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
    return std::string(line);
  }
  absl::string_view value = line.substr(colon + 1);
  absl::string_view comment;
  if (const size_t hash = value.find('#'); hash != absl::string_view::npos) {
    comment = value.substr(hash);
    value = value.substr(0, hash);
  }
  value = absl::StripAsciiWhitespace(value);
  const bool bare = !value.empty() && absl::ascii_isdigit(value[0]) &&
                    std::all_of(value.begin(), value.end(), [](char c) {
                      return absl::ascii_isalnum(c) || c == '.';
                    });
  if (!bare) return std::string(line);
  return absl::StrCat(line.substr(0, colon + 1), " \"", value, "\" ", comment);
}

std::string QuoteBareValues(const std::string& text) {
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    lines.push_back(QuoteBareValue(line));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace

absl::StatusOr<LoadedConfig> ReadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    const std::string why = absl::StrCat("cannot read config file ", path, ": ",
                                         std::strerror(error));
    return error == ENOENT ? absl::NotFoundError(why)
                           : absl::InvalidArgumentError(why);
  }
  std::stringstream raw;
  raw << in.rdbuf();
  // Line for line, so that errors keep their line numbers.
  const std::string text = QuoteBareValues(raw.str());
  LoadedConfig loaded;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors(path);
  parser.RecordErrorsTo(&errors);
  google::protobuf::TextFormat::ParseInfoTree locations;
  parser.WriteLocationsTo(&locations);
  if (!parser.ParseFromString(text, &loaded.config)) {
    return absl::InvalidArgumentError(errors.Describe(text));
  }
  const auto* descriptor = loaded.config.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const auto location =
        locations.GetLocation(field, field->is_repeated() ? 0 : -1);
    if (location.line >= 0) {
      loaded.origin[field->name()] = absl::StrCat(path, ":", location.line + 1);
    }
  }
  return loaded;
}

absl::Status ApplyFlagOverrides(
    const std::vector<std::pair<std::string, std::string>>& flags,
    LoadedConfig* config) {
  v1::DaemonConfig& message = config->config;
  const Reflection* reflection = message.GetReflection();
  for (const auto& [name, value] : flags) {
    const FieldDescriptor* field =
        message.GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " is not a configuration field"));
    }
    config->origin[name] = absl::StrCat("--", name);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
      // Numbers: protobuf's own text parser checks the type and range.
      if (!google::protobuf::TextFormat::ParseFieldValueFromString(value, field,
                                                                   &message)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name, ": '", value, "' is not a ", field->cpp_type_name()));
      }
    } else if (field->is_repeated()) {
      reflection->ClearField(&message, field);
      for (absl::string_view item :
           absl::StrSplit(value, ',', absl::SkipEmpty())) {
        reflection->AddString(&message, field, std::string(item));
      }
    } else {
      reflection->SetString(&message, field, value);
    }
  }
  return absl::OkStatus();
}

bool IsConfigField(const std::string& name) {
  return FindSetting(name) != nullptr;
}

std::string DescribeOptions(const DaemonOptions& options) {
  std::string text;
  for (const Setting& setting : Settings()) {
    absl::StrAppend(&text, setting.name, ": ", Describe(setting, options),
                    "\n");
  }
  absl::StrAppend(&text, "# rings: /dev/shm/",
                  SegmentPrefix(SocketPathFromTarget(options.target)), "*\n");
  return text;
}

std::vector<std::string> FlagNamesIn(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") break;
    if (!arg.starts_with('-')) continue;
    arg.remove_prefix(arg.starts_with("--") ? 2 : 1);
    names.emplace_back(arg.substr(0, arg.find('=')));
  }
  return names;
}

absl::StatusOr<DaemonOptions> ToDaemonOptions(const LoadedConfig& loaded) {
  DaemonOptions options;
  const auto* descriptor = loaded.config.GetDescriptor();
  for (const Setting& setting : Settings()) {
    const FieldDescriptor* field =
        descriptor->FindFieldByName(std::string(setting.name));
    STOKER_CHECK(field != nullptr);  // a setting missing from config.proto
    const std::optional<std::string> text = FieldText(loaded.config, field);
    if (!text) continue;  // the default
    if (absl::Status read = setting.parse(*text, &options); !read.ok()) {
      return FieldError(loaded, std::string(setting.name),
                        std::string(read.message()));
    }
  }
  return options;
}

}  // namespace stoker
