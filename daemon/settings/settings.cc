#include "daemon/settings/settings.h"

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

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

// Value parsers: a setting's text to its value, or what is wrong with it.
// (For numbers, the file's parser and the flags have already checked that
// the text is a number of the field's type.)
template <uint64_t kMin, uint64_t kMax>
absl::StatusOr<uint64_t> Number(absl::string_view text) {
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text, &value) || value < kMin || value > kMax) {
    return Invalid(
        text, absl::StrCat("is not a whole number from ", kMin, " to ", kMax));
  }
  return value;
}

absl::StatusOr<absl::Duration> Duration(absl::string_view text) {
  absl::Duration value;
  if (!absl::ParseDuration(text, &value) || value < absl::ZeroDuration()) {
    return Invalid(text, "is not a duration such as \"90s\", \"10m\" or \"0\"");
  }
  return value;
}

absl::StatusOr<std::string> Text(absl::string_view text) {
  return std::string(text);
}

absl::StatusOr<std::string> Socket(absl::string_view text) {
  return NormalizeSocketTarget(std::string(text));
}

absl::StatusOr<std::string> AbsolutePath(absl::string_view text) {
  if (!text.empty() && text[0] != '/') {
    return Invalid(text, "is not an absolute path");
  }
  return std::string(text);
}

absl::StatusOr<std::vector<std::string>> Roots(absl::string_view text) {
  std::vector<std::string> roots = absl::StrSplit(text, ',', absl::SkipEmpty());
  for (const std::string& root : roots) {
    if (!root.starts_with('/')) return Invalid(root, "is not an absolute path");
  }
  return roots;
}

absl::StatusOr<std::string> HostPort(absl::string_view text) {
  const size_t colon = text.rfind(':');
  int port = 0;
  if (!text.empty() && (colon == absl::string_view::npos ||
                        !absl::SimpleAtoi(text.substr(colon + 1), &port) ||
                        port < 0 || port > 65535)) {
    return Invalid(text, "is not host:port such as \"127.0.0.1:9464\"");
  }
  return std::string(text);
}

absl::StatusOr<bool> MetricsLabels(absl::string_view text) {
  if (text == "ids" || text == "names") return text == "names";
  return Invalid(text, "is not ids or names");
}

absl::StatusOr<std::string> LogLevel(absl::string_view text) {
  static constexpr absl::string_view kLevels[] = {"trace", "debug", "info",
                                                  "warn",  "error", "off"};
  for (absl::string_view level : kLevels) {
    if (text == level) return std::string(text);
  }
  return Invalid(text, "is not one of trace, debug, info, warn, error, off");
}

// A bytes field's bound: 1 byte to 16 MiB (a job's slot, at most 2 GiB,
// bounds it further).
absl::StatusOr<uint64_t> FieldBytes(absl::string_view text) {
  auto value = ParseByteSize(text);
  if (!value.ok()) return value.status();
  if (*value < 1 || *value > (uint64_t{16} << 20)) {
    return Invalid(text, "is not a size from 1 byte to 16M");
  }
  return *value;
}

// A row's reader: member `kMember` set to the value `kParse` reads.
template <auto kMember, auto kParse>
absl::Status Read(absl::string_view text, DaemonOptions* o) {
  auto value = kParse(text);
  if (!value.ok()) return value.status();
  using Member = std::remove_reference_t<decltype(o->*kMember)>;
  o->*kMember = static_cast<Member>(*std::move(value));
  return absl::OkStatus();
}

template <auto kMember>
std::string ShowNumber(const DaemonOptions& o) {
  return absl::StrCat(o.*kMember);
}

template <auto kMember>
std::string ShowDuration(const DaemonOptions& o) {
  return absl::FormatDuration(o.*kMember);
}

template <auto kMember>
std::string ShowText(const DaemonOptions& o) {
  return o.*kMember;
}

constexpr uint64_t kUint32Max = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kUint64Max = std::numeric_limits<uint64_t>::max();
using O = DaemonOptions;

const std::array<Setting, 29> kSettings = {{
    {"socket", false,
     "the Unix socket to serve: a path, unix:PATH or unix://PATH; the ring "
     "socket is PATH.ring beside it",
     Read<&O::target, Socket>, ShowText<&O::target>},
    {"socket_group", false,
     "group given to the sockets (mode 0660): the users allowed to connect",
     Read<&O::socket_group, Text>, ShowText<&O::socket_group>,
     "stokerd's own group"},
    {"workers", false, "decode worker threads",
     Read<&O::workers, Number<0, 1024>>, ShowNumber<&O::workers>,
     "one per core but one"},
    {"max_image_pixels", false,
     "images with more pixels are refused as corrupt (decompression bomb "
     "guard)",
     Read<&O::max_image_pixels, Number<1, kUint64Max>>,
     ShowNumber<&O::max_image_pixels>},
    {"dataset_roots", true,
     "comma-separated directories datasets must resolve into (after "
     "symlinks and ..)",
     Read<&O::dataset_roots, Roots>,
     [](const O& o) { return absl::StrJoin(o.dataset_roots, ","); },
     "any path but /proc, /sys and /dev"},
    {"shm_budget", true,
     "shared memory all job rings together may reserve, e.g. 16G",
     Read<&O::shm_budget_bytes, ParseByteSize>,
     [](const O& o) { return FormatByteSize(o.shm_budget_bytes); },
     "half of /dev/shm"},
    {"shm_budget_per_user", true,
     "shared memory the rings of one user's jobs may reserve",
     Read<&O::shm_budget_per_user_bytes, ParseByteSize>,
     [](const O& o) { return FormatByteSize(o.shm_budget_per_user_bytes); },
     "half of shm_budget"},
    {"max_jobs", true, "most jobs at once, ended ones not yet forgotten too",
     Read<&O::max_jobs, Number<1, kUint32Max>>, ShowNumber<&O::max_jobs>},
    {"max_jobs_per_user", true, "most jobs one user (uid) may hold at once",
     Read<&O::max_jobs_per_user, Number<1, kUint32Max>>,
     ShowNumber<&O::max_jobs_per_user>},
    {"max_leases_per_user", true,
     "most batches one user may have outstanding (credits plus unreleased "
     "leases, over all its consumers)",
     Read<&O::max_leases_per_user, Number<1, kUint32Max>>,
     ShowNumber<&O::max_leases_per_user>},
    {"max_connections_per_user", true,
     "most connections one user may hold open at once (both sockets)",
     Read<&O::max_connections_per_user, Number<1, 65536>>,
     ShowNumber<&O::max_connections_per_user>},
    {"handshake_timeout", true,
     "a connection that makes no call within this long is closed",
     Read<&O::handshake_timeout, Duration>,
     ShowDuration<&O::handshake_timeout>},
    {"lease_timeout", true,
     "a consumer holding one batch longer than this is ended and its batches "
     "go to the next consumer; 0 disables",
     Read<&O::lease_timeout, Duration>, ShowDuration<&O::lease_timeout>},
    {"keepalive", false,
     "ping interval and timeout that detect a frozen or vanished client; 0 "
     "disables",
     Read<&O::keepalive, Duration>, ShowDuration<&O::keepalive>},
    {"max_dataset_samples", true, "most images one dataset may hold",
     Read<&O::max_dataset_samples, Number<1, kUint32Max>>,
     ShowNumber<&O::max_dataset_samples>},
    {"scan_timeout", true, "longest a dataset scan may take",
     Read<&O::scan_timeout, Duration>, ShowDuration<&O::scan_timeout>},
    {"max_index_per_user", true,
     "dataset indexes one user's jobs may hold in memory (shared ones "
     "once); 0: no limit",
     Read<&O::max_index_bytes_per_user, ParseByteSize>,
     [](const O& o) { return FormatByteSize(o.max_index_bytes_per_user); }},
    {"max_field_bytes", true,
     "most bytes one sample's value of a bytes field (caption, JSON, array) "
     "may hold; a job may ask for less",
     Read<&O::max_field_bytes, FieldBytes>,
     [](const O& o) { return FormatByteSize(o.max_field_bytes); }},
    {"orphan_timeout", true,
     "a running job with no consumer for this long is ended and its ring "
     "freed; 0 disables",
     Read<&O::orphan_timeout, Duration>, ShowDuration<&O::orphan_timeout>},
    {"ended_job_ttl", true,
     "an ended job is forgotten this long after it ended; 0 disables",
     Read<&O::ended_job_ttl, Duration>, ShowDuration<&O::ended_job_ttl>},
    {"max_worker_scratch", false,
     "a worker frees its decode buffers when they hold more than this",
     Read<&O::max_worker_scratch_bytes, ParseByteSize>,
     [](const O& o) { return FormatByteSize(o.max_worker_scratch_bytes); }},
    {"cache_dir", false,
     "directory of the node-local shard cache that remote (s3://, http(s)://) "
     "shards are fetched into and kept in across restarts",
     Read<&O::cache_dir, AbsolutePath>, ShowText<&O::cache_dir>,
     "none: remote shards refused"},
    {"cache_size", false,
     "most bytes of shards the shard cache keeps (least recently used ones "
     "go first)",
     Read<&O::cache_size_bytes, ParseByteSize>,
     [](const O& o) { return FormatByteSize(o.cache_size_bytes); }},
    {"cache_size_per_user", false,
     "most bytes of the shard cache one user's jobs may hold or fetch at "
     "once",
     Read<&O::cache_size_per_user_bytes, ParseByteSize>,
     [](const O& o) { return FormatByteSize(o.cache_size_per_user_bytes); },
     "half of cache_size"},
    {"fetch_timeout", true,
     "longest the fetch of one job's remote shards may take when it is "
     "created",
     Read<&O::fetch_timeout, Duration>, ShowDuration<&O::fetch_timeout>},
    {"remote_ca_file", false,
     "PEM certificates that https:// fetches of remote shards trust instead "
     "of the system's (a store behind a private CA)",
     Read<&O::remote_ca_file, AbsolutePath>, ShowText<&O::remote_ca_file>,
     "the system's"},
    {"metrics_address", false,
     "serve Prometheus metrics over HTTP at host:port (GET /metrics), e.g. "
     "127.0.0.1:9464",
     Read<&O::metrics_address, HostPort>, ShowText<&O::metrics_address>, "off"},
    {"metrics_labels", false,
     "per-job series labelled by ids only (ids) or also by the names users "
     "gave jobs and consumers (names: every user who can reach the metrics "
     "reads them)",
     Read<&O::metrics_names, MetricsLabels>,
     [](const O& o) { return std::string(o.metrics_names ? "names" : "ids"); },
     "job and consumer names kept out"},
    {"log_level", true, "trace, debug, info, warn, error or off",
     Read<&O::log_level, LogLevel>, ShowText<&O::log_level>},
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
