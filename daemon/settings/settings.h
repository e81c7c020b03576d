// stokerd's settings, one row each in one table (settings.cc): the name
// (the field of stoker.v1.DaemonConfig in proto/stoker/v1/config.proto and
// the flag of the same name), whether SIGHUP may change it, its help, how a
// value is read from text (with its validation) and shown as text. The
// defaults are DaemonOptions' member initializers (options.h), shown through
// the same row. The table drives the flags (--help), the file and flags
// (ToDaemonOptions in config.h), --check_config and reload
// (Daemon::Reconfigure); a test checks that config.proto has exactly its
// fields.
#ifndef STOKER_DAEMON_SETTINGS_SETTINGS_H_
#define STOKER_DAEMON_SETTINGS_SETTINGS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "daemon/settings/options.h"

namespace stoker {

struct Setting {
  const char* name;
  bool reloadable;
  const char* help;
  // Reads `text` into `options`; INVALID_ARGUMENT saying what is wrong with
  // it (the caller names the field and where the value came from).
  absl::Status (*parse)(absl::string_view text, DaemonOptions* options);
  // The value in `options`, as `parse` reads it (lists: comma-separated).
  std::string (*show)(const DaemonOptions& options);
  // What the default means, shown after it ("one per core but one").
  const char* default_note = "";
};

// Every setting, in the order of config.proto.
absl::Span<const Setting> Settings();
// nullptr if `name` is not a setting.
const Setting* FindSetting(std::string_view name);
// The default, as text.
std::string DefaultText(const Setting& setting);
// The value in `options` for people: shown, and the default's note when it
// is the default ("0 (one per core but one)", "(off)").
std::string Describe(const Setting& setting, const DaemonOptions& options);

}  // namespace stoker

#endif  // STOKER_DAEMON_SETTINGS_SETTINGS_H_
