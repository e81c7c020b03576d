#include "daemon/datasets/manifest.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "daemon/datasets/manifest_rows.h"

namespace stoker {
namespace {

// Opens the manifest, stamping it; *resolved is where it lies.
absl::StatusOr<UniqueFd> OpenManifest(const std::string& path,
                                      const PathPolicy& policy,
                                      std::string* resolved, FileStamp* stamp) {
  struct stat st;
  STOKER_ASSIGN_OR_RETURN(
      UniqueFd fd,
      OpenDatasetFile(path, policy, "dataset.manifest", resolved, stamp, &st));
  if (uint64_t(st.st_size) > kMaxManifestBytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("dataset.manifest '", path, "' is ", st.st_size,
                     " bytes; stokerd reads at most ", kMaxManifestBytes));
  }
  return fd;
}

// Turns rows into index entries: resolves each directory once, checks each
// file, gathers class names.
class RowIndexer {
 public:
  RowIndexer(const std::string& manifest, const std::string& base,
             const ScanLimits& limits, bool skip_missing,
             std::vector<bool> value_paths, DatasetIndex::Builder* index)
      : manifest_(manifest),
        base_(base),
        limits_(limits),
        policy_(PolicyOf(limits)),
        clock_(limits),
        skip_missing_(skip_missing),
        value_paths_(std::move(value_paths)),
        index_(index) {}

  absl::Status Add(const ManifestRow& row);
  std::vector<std::string> ClassNames() const;

 private:
  absl::Status Bad(const ManifestRow& row, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("manifest '", manifest_, "' line ", row.line, ": ", what));
  }
  absl::StatusOr<std::string> Directory(const ManifestRow& row,
                                        const std::string& directory);
  // A row's `path` (taken from the manifest's directory), checked to be a
  // file: its resolved directory and its name.
  absl::StatusOr<std::pair<std::string, std::string>> Locate(
      const ManifestRow& row, const std::string& path);
  absl::Status AddClass(const ManifestRow& row);

  const std::string& manifest_;
  const std::string& base_;
  const ScanLimits& limits_;
  const PathPolicy& policy_;
  const ScanClock clock_;
  const bool skip_missing_;
  const std::vector<bool> value_paths_;
  DatasetIndex::Builder* const index_;
  absl::flat_hash_map<std::string, std::string> resolved_;
  std::vector<std::optional<std::string>> classes_;
};

absl::StatusOr<std::string> RowIndexer::Directory(
    const ManifestRow& row, const std::string& directory) {
  auto it = resolved_.find(directory);
  if (it != resolved_.end()) return it->second;
  absl::StatusOr<std::string> resolved =
      policy_.Resolve(directory, "the directory");
  if (!resolved.ok()) {
    return absl::Status(
        resolved.status().code(),
        absl::StrCat("manifest '", manifest_, "' line ", row.line, ": ",
                     resolved.status().message()));
  }
  return resolved_.emplace(directory, *std::move(resolved)).first->second;
}

absl::Status RowIndexer::AddClass(const ManifestRow& row) {
  if (!row.class_name) return absl::OkStatus();
  if (row.label < 0 || row.label >= kMaxManifestClasses) {
    return Bad(row, absl::StrCat("a class name needs a label in [0, ",
                                 kMaxManifestClasses, "), not ", row.label));
  }
  if (size_t(row.label) >= classes_.size()) classes_.resize(row.label + 1);
  std::optional<std::string>& name = classes_[row.label];
  if (name && *name != *row.class_name) {
    return Bad(row,
               absl::StrCat("names label ", row.label, " '", *row.class_name,
                            "', an earlier row '", *name, "'"));
  }
  name = *row.class_name;
  return absl::OkStatus();
}

absl::Status RowIndexer::Add(const ManifestRow& row) {
  if (index_->samples() % 4096 == 0) {
    STOKER_RETURN_IF_ERROR(clock_.Check(
        absl::StrCat("line ", row.line, " of manifest '", manifest_, "'")));
  }
  if (index_->samples() >= limits_.max_samples) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "manifest '", manifest_, "' holds more than ", limits_.max_samples,
        " rows, the most stokerd takes in one dataset "
        "(--max_dataset_samples)"));
  }
  const bool complete =
      row.has_path &&
      std::all_of(row.values.begin(), row.values.end(),
                  [](const auto& value) { return value.has_value(); });
  if (!complete && skip_missing_) {
    index_->Skip(1);
    return absl::OkStatus();
  }
  if (!row.has_path) {
    return Bad(row,
               "has no image path (a manifest lists files: with "
               "missing=skip such rows are left out)");
  }
  STOKER_ASSIGN_OR_RETURN(const auto located, Locate(row, row.path));
  const auto& [directory, name] = located;
  // A further file's path is held resolved, so that it is read as the
  // image is (PathPolicy) whatever the daemon's directory.
  std::vector<std::optional<std::string>> values = row.values;
  for (size_t i = 0; i < values.size() && i < value_paths_.size(); ++i) {
    if (!value_paths_[i] || !values[i]) continue;
    STOKER_ASSIGN_OR_RETURN(const auto file, Locate(row, *values[i]));
    values[i] = absl::StrCat(file.first, "/", file.second);
  }
  STOKER_RETURN_IF_ERROR(AddClass(row));
  return index_->AddFile(directory == "/" ? "" : directory, name, row.label,
                         values);
}

absl::StatusOr<std::pair<std::string, std::string>> RowIndexer::Locate(
    const ManifestRow& row, const std::string& path) {
  if (path.empty() || path.find('\0') != std::string::npos) {
    return Bad(row, "a path is empty or holds a NUL byte");
  }
  const std::filesystem::path full =
      (std::filesystem::path(base_) / path).lexically_normal();
  std::string name = full.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return Bad(row, absl::StrCat("'", path, "' names a directory"));
  }
  STOKER_ASSIGN_OR_RETURN(std::string directory,
                          Directory(row, full.parent_path().string()));
  const std::string file = absl::StrCat(directory, "/", name);
  struct stat st;
  if (::stat(file.c_str(), &st) != 0) {
    const std::string text =
        absl::StrCat("manifest '", manifest_, "' line ", row.line, ": '", path,
                     "' cannot be read: ", std::strerror(errno));
    return errno == ENOENT ? absl::NotFoundError(text)
                           : absl::PermissionDeniedError(text);
  }
  if (S_ISDIR(st.st_mode)) {
    return Bad(row, absl::StrCat("'", path, "' is a directory"));
  }
  return std::make_pair(std::move(directory), std::move(name));
}

std::vector<std::string> RowIndexer::ClassNames() const {
  std::vector<std::string> names;
  names.reserve(classes_.size());
  for (const auto& name : classes_) names.push_back(name.value_or(""));
  return names;
}

// The columns a manifest's rows are read from for `schema`, and how its
// index holds each field.
ManifestColumns ColumnsOf(const SampleSchema& schema,
                          std::vector<FieldStore>* stores) {
  ManifestColumns columns;
  if (schema.classic()) {
    stores->push_back(FieldStore::kFile);
    return columns;
  }
  columns.labels = false;
  bool path = false;
  for (const SchemaField& field : schema.fields) {
    if (field.image && !path) {  // the image's, the sample's own file
      columns.path = field.source.front();
      stores->push_back(FieldStore::kFile);
      path = true;
    } else {  // a further file (a mask) is a path held as text
      columns.values.push_back(field.source.front());
      columns.value_paths.push_back(field.image);
      stores->push_back(field.image ? FieldStore::kPath : FieldStore::kText);
    }
  }
  return columns;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexManifest(
    const std::string& path, const ScanLimits& limits,
    const SampleSchema& schema) {
  if (path.empty()) {
    return absl::InvalidArgumentError("dataset.manifest is empty");
  }
  const std::string lower = absl::AsciiStrToLower(path);
  const bool csv = absl::EndsWith(lower, ".csv");
  if (!csv && !absl::EndsWith(lower, ".jsonl") &&
      !absl::EndsWith(lower, ".ndjson")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset.manifest '", path,
        "': name a .csv or a .jsonl (JSON lines) file; the format follows "
        "the name"));
  }
  std::string resolved;
  FileStamp stamp;
  STOKER_ASSIGN_OR_RETURN(
      const UniqueFd fd,
      OpenManifest(path, PolicyOf(limits), &resolved, &stamp));
  std::vector<FieldStore> stores;
  const ManifestColumns columns = ColumnsOf(schema, &stores);
  DatasetIndex::Builder index(DatasetKind::kManifest, std::move(stores));
  index.AddStamp(std::move(stamp));
  const std::string base =
      std::filesystem::path(resolved).parent_path().string();
  RowIndexer rows(path, base, limits, schema.skip_missing, columns.value_paths,
                  &index);
  const RowSink sink = [&rows](const ManifestRow& row) {
    return rows.Add(row);
  };
  const std::unique_ptr<ManifestLines> lines = LinesOfFile(fd.get(), path);
  STOKER_RETURN_IF_ERROR(
      csv ? ParseCsvManifest(*lines, path, sink, columns)
          : ParseJsonLinesManifest(*lines, path, sink, columns));
  if (index.samples() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset.manifest '", path, "' holds no row",
                     schema.classic() ? "" : " with the job's fields"));
  }
  index.SetClassNames(rows.ClassNames());
  return index.Build();
}

}  // namespace stoker
