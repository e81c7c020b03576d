#include "daemon/settings.h"

#include <array>
#include <cstdint>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/naming.h"
#include "daemon/os/byte_size.h"

namespace stoker {
namespace {

absl::Status Invalid(absl::string_view text, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("'", text, "' ", what));
}

// A whole number in [min, max] into *out. (The file's parser and the
// flags have already checked that it is a number of the field's type.)
template <typename T>
absl::Status ParseNumber(absl::string_view text, uint64_t min, uint64_t max,
                         absl::string_view range, T* out) {
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < min || value > max) {
    return Invalid(text, absl::StrCat("is not ", range));
  }
  *out = static_cast<T>(value);
  return absl::OkStatus();
}

absl::Status ReadDuration(absl::string_view text, absl::Duration* out) {
  if (!absl::ParseDuration(text, out) || *out < absl::ZeroDuration()) {
    return Invalid(text, "is not a duration such as \"90s\", \"10m\" or \"0\"");
  }
  return absl::OkStatus();
}

absl::Status ParseSocket(absl::string_view text, DaemonOptions* o) {
  absl::StatusOr<std::string> target = NormalizeSocketTarget(std::string(text));
  if (!target.ok())
    return absl::InvalidArgumentError(target.status().message());
  o->target = *std::move(target);
  return absl::OkStatus();
}

absl::Status ParseRoots(absl::string_view text, DaemonOptions* o) {
  std::vector<std::string> roots = absl::StrSplit(text, ',', absl::SkipEmpty());
  for (const std::string& root : roots) {
    if (!root.starts_with('/')) return Invalid(root, "is not an absolute path");
  }
  o->dataset_roots = std::move(roots);
  return absl::OkStatus();
}

absl::Status ParseBudget(absl::string_view text, DaemonOptions* o) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(text);
  if (!bytes.ok()) return absl::InvalidArgumentError(bytes.status().message());
  o->shm_budget_bytes = *bytes;
  return absl::OkStatus();
}

absl::Status ParseMetricsAddress(absl::string_view text, DaemonOptions* o) {
  const size_t colon = text.rfind(':');
  int port = 0;
  if (!text.empty() && (colon == absl::string_view::npos ||
                        !absl::SimpleAtoi(text.substr(colon + 1), &port) ||
                        port < 0 || port > 65535)) {
    return Invalid(text, "is not host:port such as \"127.0.0.1:9464\"");
  }
  o->metrics_address = std::string(text);
  return absl::OkStatus();
}

absl::Status ParseLogLevel(absl::string_view text, DaemonOptions* o) {
  static constexpr absl::string_view kLevels[] = {"trace", "debug", "info",
                                                  "warn",  "error", "off"};
  for (absl::string_view level : kLevels) {
    if (text == level) {
      o->log_level = std::string(text);
      return absl::OkStatus();
    }
  }
  return Invalid(text, "is not one of trace, debug, info, warn, error, off");
}

constexpr uint64_t kUint32Max = std::numeric_limits<uint32_t>::max();

const std::array<Setting, 13> kSettings = {{
    {"socket", false,
     "the Unix socket to serve: a path, unix:PATH or unix://PATH; the ring "
     "socket is PATH.ring beside it",
     ParseSocket, [](const DaemonOptions& o) { return o.target; }},
    {"socket_group", false,
     "group given to the sockets (mode 0660): the users allowed to connect",
     [](absl::string_view text, DaemonOptions* o) {
       o->socket_group = std::string(text);
       return absl::OkStatus();
     },
     [](const DaemonOptions& o) { return o.socket_group; },
     "stokerd's own group"},
    {"workers", false, "decode worker threads",
     [](absl::string_view text, DaemonOptions* o) {
       return ParseNumber(text, 0, 1024,
                          "between 0 (one per core but one) and 1024",
                          &o->workers);
     },
     [](const DaemonOptions& o) { return absl::StrCat(o.workers); },
     "one per core but one"},
    {"max_image_pixels", false,
     "images with more pixels are refused as corrupt (decompression bomb "
     "guard)",
     [](absl::string_view text, DaemonOptions* o) {
       return ParseNumber(text, 1, std::numeric_limits<uint64_t>::max(),
                          "above 0", &o->max_image_pixels);
     },
     [](const DaemonOptions& o) { return absl::StrCat(o.max_image_pixels); }},
    {"dataset_roots", true,
     "comma-separated directories datasets must resolve into (after "
     "symlinks and ..)",
     ParseRoots,
     [](const DaemonOptions& o) { return absl::StrJoin(o.dataset_roots, ","); },
     "any path but /proc, /sys and /dev"},
    {"shm_budget", true,
     "shared memory all job rings together may reserve, e.g. 16G", ParseBudget,
     [](const DaemonOptions& o) { return FormatByteSize(o.shm_budget_bytes); },
     "only /dev/shm's free space limits it"},
    {"max_jobs", true, "most jobs running at once",
     [](absl::string_view text, DaemonOptions* o) {
       return ParseNumber(text, 1, kUint32Max, "above 0", &o->max_jobs);
     },
     [](const DaemonOptions& o) { return absl::StrCat(o.max_jobs); }},
    {"max_jobs_per_client", true, "most jobs one client may run at once",
     [](absl::string_view text, DaemonOptions* o) {
       return ParseNumber(text, 1, kUint32Max, "above 0",
                          &o->max_jobs_per_client);
     },
     [](const DaemonOptions& o) {
       return absl::StrCat(o.max_jobs_per_client);
     }},
    {"max_leases_per_client", true,
     "most batches one client may have outstanding (credits plus unreleased "
     "leases, over all its consumers)",
     [](absl::string_view text, DaemonOptions* o) {
       return ParseNumber(text, 1, kUint32Max, "above 0",
                          &o->max_leases_per_client);
     },
     [](const DaemonOptions& o) {
       return absl::StrCat(o.max_leases_per_client);
     }},
    {"lease_timeout", true,
     "a consumer holding one batch longer than this is ended and its batches "
     "go to the next consumer; 0 disables",
     [](absl::string_view text, DaemonOptions* o) {
       return ReadDuration(text, &o->lease_timeout);
     },
     [](const DaemonOptions& o) {
       return absl::FormatDuration(o.lease_timeout);
     }},
    {"keepalive", false,
     "ping interval and timeout that detect a frozen or vanished client; 0 "
     "disables",
     [](absl::string_view text, DaemonOptions* o) {
       return ReadDuration(text, &o->keepalive);
     },
     [](const DaemonOptions& o) { return absl::FormatDuration(o.keepalive); }},
    {"metrics_address", false,
     "serve Prometheus metrics over HTTP at host:port (GET /metrics), e.g. "
     "127.0.0.1:9464",
     ParseMetricsAddress,
     [](const DaemonOptions& o) { return o.metrics_address; }, "off"},
    {"log_level", true, "trace, debug, info, warn, error or off", ParseLogLevel,
     [](const DaemonOptions& o) { return o.log_level; }},
}};

}  // namespace

absl::Span<const Setting> Settings() { return kSettings; }

const Setting* FindSetting(std::string_view name) {
  for (const Setting& setting : kSettings) {
    if (setting.name == name) return &setting;
  }
  return nullptr;
}

std::string DefaultText(const Setting& setting) {
  return setting.show(DaemonOptions{});
}

std::string Describe(const Setting& setting, const DaemonOptions& options) {
  const std::string value = setting.show(options);
  if (*setting.default_note == '\0' || value != DefaultText(setting)) {
    return value;
  }
  if (value.empty()) return absl::StrCat("(", setting.default_note, ")");
  return absl::StrCat(value, " (", setting.default_note, ")");
}

}  // namespace stoker
