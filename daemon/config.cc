#include "daemon/config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/naming.h"
#include "daemon/os/byte_size.h"
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
    return absl::StrCat(error_.substr(0, colon + 2), std::string(field.substr(0, end)),
                        ": ", error_.substr(colon + 2));
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

absl::StatusOr<absl::Duration> ParseDurationField(const LoadedConfig& config,
                                                  const std::string& field,
                                                  const std::string& text) {
  absl::Duration value;
  if (!absl::ParseDuration(text, &value) || value < absl::ZeroDuration()) {
    return FieldError(config, field,
                      absl::StrCat("'", text,
                                   "' is not a duration such as \"90s\", "
                                   "\"10m\" or \"0\""));
  }
  return value;
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
  if (field == nullptr || field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
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
    const std::string why =
        absl::StrCat("cannot read config file ", path, ": ", std::strerror(error));
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
      if (!google::protobuf::TextFormat::ParseFieldValueFromString(
              value, field, &message)) {
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
  return v1::DaemonConfig::descriptor()->FindFieldByName(name) != nullptr;
}

std::string DescribeOptions(const DaemonOptions& o) {
  return absl::StrCat(
      "socket: ", o.target, "\nsocket_group: ", o.socket_group,
      "\nworkers: ", o.workers, o.workers == 0 ? " (one per core but one)" : "",
      "\nmax_image_pixels: ", o.max_image_pixels,
      "\ndataset_roots: ", absl::StrJoin(o.dataset_roots, ","),
      o.dataset_roots.empty() ? "(any but /proc, /sys, /dev)" : "",
      "\nshm_budget: ", FormatByteSize(o.shm_budget_bytes),
      "\nmax_jobs: ", o.max_jobs,
      "\nmax_jobs_per_client: ", o.max_jobs_per_client,
      "\nmax_leases_per_client: ", o.max_leases_per_client,
      "\nlease_timeout: ", absl::FormatDuration(o.lease_timeout),
      "\nkeepalive: ", absl::FormatDuration(o.keepalive),
      "\nmetrics_address: ", o.metrics_address,
      "\nlog_level: ", o.log_level,
      "\n# rings: /dev/shm/", SegmentPrefix(SocketPathFromTarget(o.target)),
      "*\n");
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
  const v1::DaemonConfig& c = loaded.config;
  DaemonOptions options;
  if (c.has_socket()) {
    absl::StatusOr<std::string> target = NormalizeSocketTarget(c.socket());
    if (!target.ok()) {
      return FieldError(loaded, "socket", std::string(target.status().message()));
    }
    options.target = *std::move(target);
  }
  if (c.has_socket_group()) options.socket_group = c.socket_group();
  if (c.has_workers()) {
    if (c.workers() < 0 || c.workers() > 1024) {
      return FieldError(loaded, "workers",
                        absl::StrCat(c.workers(),
                                     " is not between 0 (one per core but "
                                     "one) and 1024"));
    }
    options.workers = c.workers();
  }
  if (c.has_max_image_pixels()) {
    if (c.max_image_pixels() == 0) {
      return FieldError(loaded, "max_image_pixels", "must be above 0");
    }
    options.max_image_pixels = c.max_image_pixels();
  }
  options.dataset_roots.assign(c.dataset_roots().begin(),
                               c.dataset_roots().end());
  for (const std::string& root : options.dataset_roots) {
    if (!root.starts_with('/')) {
      return FieldError(loaded, "dataset_roots",
                        absl::StrCat("'", root, "' is not an absolute path"));
    }
  }
  if (c.has_shm_budget()) {
    auto bytes = ParseByteSize(c.shm_budget());
    if (!bytes.ok()) {
      return FieldError(loaded, "shm_budget",
                        std::string(bytes.status().message()));
    }
    options.shm_budget_bytes = *bytes;
  }
  if (c.has_max_jobs()) {
    if (c.max_jobs() == 0) return FieldError(loaded, "max_jobs", "must be above 0");
    options.max_jobs = c.max_jobs();
  }
  if (c.has_max_jobs_per_client()) {
    if (c.max_jobs_per_client() == 0) {
      return FieldError(loaded, "max_jobs_per_client", "must be above 0");
    }
    options.max_jobs_per_client = c.max_jobs_per_client();
  }
  if (c.has_max_leases_per_client()) {
    if (c.max_leases_per_client() == 0) {
      return FieldError(loaded, "max_leases_per_client", "must be above 0");
    }
    options.max_leases_per_client = c.max_leases_per_client();
  }
  if (c.has_lease_timeout()) {
    auto value = ParseDurationField(loaded, "lease_timeout", c.lease_timeout());
    if (!value.ok()) return value.status();
    options.lease_timeout = *value;
  }
  if (c.has_keepalive()) {
    auto value = ParseDurationField(loaded, "keepalive", c.keepalive());
    if (!value.ok()) return value.status();
    options.keepalive = *value;
  }
  if (c.has_metrics_address()) {
    const std::string& address = c.metrics_address();
    const size_t colon = address.rfind(':');
    int port = 0;
    if (!address.empty() &&
        (colon == std::string::npos ||
         !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
         port > 65535)) {
      return FieldError(loaded, "metrics_address",
                        absl::StrCat("'", address,
                                     "' is not host:port such as "
                                     "\"127.0.0.1:9464\""));
    }
    options.metrics_address = address;
  }
  if (c.has_log_level()) {
    static constexpr std::string_view kLevels[] = {"trace", "debug", "info",
                                                   "warn",  "error", "off"};
    bool known = false;
    for (std::string_view level : kLevels) known |= c.log_level() == level;
    if (!known) {
      return FieldError(loaded, "log_level",
                        absl::StrCat("'", c.log_level(),
                                     "' is not one of trace, debug, info, "
                                     "warn, error, off"));
    }
    options.log_level = c.log_level();
  }
  return options;
}

}  // namespace stoker
