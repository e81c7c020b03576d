// Parsing a manifest's text into rows (see manifest.h for the formats).
#ifndef STOKER_DAEMON_DATASETS_MANIFEST_ROWS_H_
#define STOKER_DAEMON_DATASETS_MANIFEST_ROWS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "daemon/datasets/manifest_lines.h"

namespace stoker {

struct ManifestRow {
  uint64_t line = 0;  // 1-based, where the row starts
  std::string path;
  int64_t label = 0;
  std::optional<std::string> class_name;
  // ManifestColumns::values, in order: a CSV cell's text, or a JSON value's
  // JSON text (minified); nullopt where a JSON-lines row lacks the key.
  std::vector<std::optional<std::string>> values;
  // False where a JSON-lines row of named fields (no labels) lacks the
  // path's key: the row lacks its image (a classic row is refused).
  bool has_path = true;
};

// The columns (CSV) or keys (JSON lines) a manifest's rows are read from.
struct ManifestColumns {
  std::string path = "path";  // the image file's
  // "label" (an integer, required) and "class" (optional): a classic
  // manifest. Else neither is read.
  bool labels = true;
  std::vector<std::string> values;  // further ones, kept as text
  // values[i] names a file (a mask's column): a JSON-lines value must be a
  // string, kept unquoted, like the path's.
  std::vector<bool> value_paths;
};

// Calls `row` for each row of `lines` (or of `text`) in order, stopping at
// its first error. Parse errors are INVALID_ARGUMENT naming `manifest` and
// the line; so are a row longer than kMaxManifestRowBytes, a path longer
// than kMaxManifestPathBytes and a class name longer than
// kMaxManifestClassBytes; and a CSV header without one of `columns`.
// Memory: one row at a time.
using RowSink = std::function<absl::Status(const ManifestRow&)>;
absl::Status ParseCsvManifest(ManifestLines& lines, const std::string& manifest,
                              const RowSink& row,
                              const ManifestColumns& columns = {});
absl::Status ParseJsonLinesManifest(ManifestLines& lines,
                                    const std::string& manifest,
                                    const RowSink& row,
                                    const ManifestColumns& columns = {});
absl::Status ParseCsvManifest(absl::string_view text,
                              const std::string& manifest, const RowSink& row,
                              const ManifestColumns& columns = {});
absl::Status ParseJsonLinesManifest(absl::string_view text,
                                    const std::string& manifest,
                                    const RowSink& row,
                                    const ManifestColumns& columns = {});

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_MANIFEST_ROWS_H_
