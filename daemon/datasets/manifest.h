// The index of a manifest: a list of (path, label) rows, in dataset order;
// or, for a job of named fields, rows of the image's path (its column
// named by the field marked `image`) and further columns, kept as text:
// a CSV cell's text, a JSON value's JSON text (a row without the key lacks
// that field).
//
//   CSV (*.csv): a header row naming the columns "path" and "label", and
//     optionally "class" (the label's name); other columns are ignored.
//     Fields follow RFC 4180 (quotes around a field with commas, "" for a
//     quote inside one).
//   JSON lines (*.jsonl, *.ndjson): one object per line with "path" (a
//     string), "label" (an integer) and optionally "class" (a string).
//     Blank lines are skipped.
//
// A relative path is taken from the manifest's directory; an absolute one
// as it is. Each row's directory is resolved (symlinks, "..") and must lie
// inside the dataset roots; each row's file must exist. Rows naming the
// same label must give it the same class name; class names need labels in
// [0, kMaxManifestClasses).
#ifndef STOKER_DAEMON_DATASETS_MANIFEST_H_
#define STOKER_DAEMON_DATASETS_MANIFEST_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/sample_schema.h"
#include "daemon/datasets/scan_limits.h"

namespace stoker {

// A manifest is read a row at a time while its index is built (rows of at
// most kMaxManifestRowBytes, manifest_lines.h): 256 MiB holds about 5
// million CSV rows.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;
inline constexpr int64_t kMaxManifestClasses = int64_t{1} << 20;

// Indexes the manifest at `path` (resolved through limits.policy, read with
// the calling thread's file identity). Errors name the manifest and the
// line at fault: INVALID_ARGUMENT for a row that does not parse, a label
// that is not an integer, an unknown format, a manifest with no row;
// NOT_FOUND for a manifest, or a row's file, that does not exist;
// PERMISSION_DENIED for a path outside the roots; RESOURCE_EXHAUSTED past
// kMaxManifestBytes or limits.max_samples.
absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexManifest(
    const std::string& path, const ScanLimits& limits,
    const SampleSchema& schema = {});

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_MANIFEST_H_
