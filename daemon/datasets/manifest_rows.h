// Parsing a manifest's text into rows (see manifest.h for the formats).
#ifndef STOKER_DAEMON_DATASETS_MANIFEST_ROWS_H_
#define STOKER_DAEMON_DATASETS_MANIFEST_ROWS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "daemon/datasets/manifest_lines.h"

namespace stoker {

struct ManifestRow {
  uint64_t line = 0;  // 1-based, where the row starts
  std::string path;
  int64_t label = 0;
  std::optional<std::string> class_name;
};

// Calls `row` for each row of `lines` (or of `text`) in order, stopping at
// its first error. Parse errors are INVALID_ARGUMENT naming `manifest` and
// the line; so are a row longer than kMaxManifestRowBytes, a path longer
// than kMaxManifestPathBytes and a class name longer than
// kMaxManifestClassBytes. Memory: one row at a time.
using RowSink = std::function<absl::Status(const ManifestRow&)>;
absl::Status ParseCsvManifest(ManifestLines& lines, const std::string& manifest,
                              const RowSink& row);
absl::Status ParseJsonLinesManifest(ManifestLines& lines,
                                    const std::string& manifest,
                                    const RowSink& row);
absl::Status ParseCsvManifest(absl::string_view text,
                              const std::string& manifest, const RowSink& row);
absl::Status ParseJsonLinesManifest(absl::string_view text,
                                    const std::string& manifest,
                                    const RowSink& row);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_MANIFEST_ROWS_H_
