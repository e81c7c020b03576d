#include "daemon/datasets/manifest_rows.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "simdjson.h"

namespace stoker {
namespace {

absl::Status Bad(const std::string& manifest, uint64_t line,
                 absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("manifest '", manifest, "' line ", line, ": ", what));
}

std::string Quote(absl::string_view text) {
  return absl::StrCat("'", absl::CHexEscape(text.substr(0, 40)),
                      text.size() > 40 ? "...'" : "'");
}

constexpr absl::string_view kUnclosed = "a quoted field is not closed";

// Reads RFC 4180 records, counting lines.
class CsvReader {
 public:
  // `text` is one record (it may hold quoted line breaks), starting at
  // line `line`.
  CsvReader(absl::string_view text, uint64_t line) : text_(text), line_(line) {}

  bool done() const { return pos_ >= text_.size(); }
  uint64_t line() const { return line_; }

  // The next record's fields (none for a blank line); false with *error
  // set when it does not parse.
  bool Next(std::vector<std::string>* fields, std::string* error) {
    fields->clear();
    if (AtLineEnd()) {
      EndLine();
      return true;
    }
    for (;;) {
      fields->emplace_back();
      if (!Field(&fields->back(), error)) return false;
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      EndLine();
      return true;
    }
  }

 private:
  bool AtLineEnd() const {
    return pos_ >= text_.size() || text_[pos_] == '\n' ||
           absl::StartsWith(text_.substr(pos_), "\r\n");
  }
  void EndLine() {
    if (pos_ < text_.size() && text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_;
  }

  bool Field(std::string* out, std::string* error) {
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      while (pos_ < text_.size() && text_[pos_] != ',' && !AtLineEnd()) {
        *out += text_[pos_++];
      }
      return true;
    }
    ++pos_;  // the opening quote
    for (;;) {
      if (pos_ >= text_.size()) {
        *error = std::string(kUnclosed);
        return false;
      }
      const char c = text_[pos_++];
      if (c == '"' && pos_ < text_.size() && text_[pos_] == '"') {
        *out += '"';
        ++pos_;
      } else if (c == '"') {
        if (pos_ < text_.size() && text_[pos_] != ',' && !AtLineEnd()) {
          *error = "text follows a closing quote";
          return false;
        }
        return true;
      } else {
        if (c == '\n') ++line_;  // a quoted line break
        *out += c;
      }
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
  uint64_t line_;
};

absl::Status ParseLabel(const std::string& manifest, uint64_t line,
                        absl::string_view text, int64_t* label) {
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), label)) {
    return Bad(manifest, line,
               absl::StrCat("the label ", Quote(text), " is not an integer"));
  }
  return absl::OkStatus();
}

// Where each wanted column is in a CSV's rows (-1: absent).
struct Columns {
  int path = -1;
  int label = -1;
  int class_name = -1;
  std::vector<int> values;
};

int Find(const std::vector<std::string>& header, absl::string_view name) {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return int(i);
  }
  return -1;
}

absl::StatusOr<Columns> ReadHeader(const std::vector<std::string>& header,
                                   const ManifestColumns& wanted,
                                   const std::string& manifest, uint64_t line) {
  Columns columns;
  columns.path = Find(header, wanted.path);
  if (wanted.labels) {
    columns.label = Find(header, "label");
    columns.class_name = Find(header, "class");
    if (columns.path < 0 || columns.label < 0) {
      return Bad(manifest, line,
                 "the header row must name the columns \"path\" and "
                 "\"label\" (and may name \"class\")");
    }
  } else if (columns.path < 0) {
    return Bad(manifest, line,
               absl::StrCat("the header row has no column ", Quote(wanted.path),
                            " (the image's path)"));
  }
  for (const std::string& name : wanted.values) {
    columns.values.push_back(Find(header, name));
    if (columns.values.back() < 0) {
      return Bad(manifest, line,
                 absl::StrCat("the header row has no column ", Quote(name)));
    }
  }
  return columns;
}

// A classic JSON-lines row's "label" (an integer) and optional "class".
absl::Status ReadJsonLabel(const std::string& manifest,
                           simdjson::dom::object& object, uint64_t line,
                           ManifestRow* row) {
  simdjson::dom::element label;
  if (object["label"].get(label) != simdjson::SUCCESS) {
    return Bad(manifest, line, "has no \"label\"");
  }
  if (label.get(row->label) != simdjson::SUCCESS) {
    return Bad(manifest, line,
               absl::StrCat("the label ", Quote(simdjson::minify(label)),
                            " is not an integer"));
  }
  std::string_view class_name;
  if (object["class"].get(class_name) == simdjson::SUCCESS) {
    row->class_name = std::string(class_name);
  }
  return absl::OkStatus();
}

// A path or class name past its bound is refused naming the line (a path
// longer than PATH_MAX could not be opened anyway).
absl::Status CheckNames(const ManifestRow& row, const std::string& manifest) {
  if (row.path.size() > kMaxManifestPathBytes) {
    return Bad(
        manifest, row.line,
        absl::StrCat("the path ", Quote(row.path), " is ", row.path.size(),
                     " bytes, longer than ", kMaxManifestPathBytes));
  }
  if (row.class_name && row.class_name->size() > kMaxManifestClassBytes) {
    return Bad(manifest, row.line,
               absl::StrCat("the class name ", Quote(*row.class_name), " is ",
                            row.class_name->size(), " bytes, longer than ",
                            kMaxManifestClassBytes));
  }
  return absl::OkStatus();
}

// A CSV record's row, the record at `line` holding `fields`.
absl::Status CsvRow(const std::vector<std::string>& fields,
                    const Columns& columns, const std::string& manifest,
                    uint64_t line, ManifestRow* row) {
  int needed = std::max({columns.path, columns.label, columns.class_name}) + 1;
  for (int value : columns.values) needed = std::max(needed, value + 1);
  if (int(fields.size()) < needed) {
    return Bad(manifest, line,
               absl::StrCat("has ", fields.size(),
                            " fields; the header needs at least ", needed));
  }
  row->line = line;
  row->path = fields[columns.path];
  row->label = 0;
  if (columns.label >= 0) {
    STOKER_RETURN_IF_ERROR(
        ParseLabel(manifest, line, fields[columns.label], &row->label));
  }
  row->class_name.reset();
  if (columns.class_name >= 0) row->class_name = fields[columns.class_name];
  row->values.clear();
  for (int value : columns.values) row->values.push_back(fields[value]);
  return CheckNames(*row, manifest);
}

}  // namespace

absl::Status ParseCsvManifest(absl::string_view text,
                              const std::string& manifest, const RowSink& row,
                              const ManifestColumns& columns) {
  return ParseCsvManifest(*LinesOfText(text, manifest), manifest, row, columns);
}

absl::Status ParseJsonLinesManifest(absl::string_view text,
                                    const std::string& manifest,
                                    const RowSink& row,
                                    const ManifestColumns& columns) {
  return ParseJsonLinesManifest(*LinesOfText(text, manifest), manifest, row,
                                columns);
}

absl::Status ParseCsvManifest(ManifestLines& lines, const std::string& manifest,
                              const RowSink& sink,
                              const ManifestColumns& wanted) {
  std::vector<std::string> fields;
  std::string error;
  std::optional<Columns> columns;
  ManifestRow row;
  std::string record;
  absl::string_view text;
  for (;;) {
    STOKER_ASSIGN_OR_RETURN(bool more, lines.Next(&text));
    if (!more) break;
    const uint64_t line = lines.line();
    if (line == 1 && absl::StartsWith(text, "\xEF\xBB\xBF")) {
      text.remove_prefix(3);  // a byte-order mark
    }
    // A record whose quoted field holds line breaks takes the next lines.
    record.assign(text.data(), text.size());
    for (;;) {
      error.clear();
      if (CsvReader(record, line).Next(&fields, &error)) break;
      if (error != kUnclosed) return Bad(manifest, line, error);
      STOKER_ASSIGN_OR_RETURN(more, lines.Next(&text));
      if (!more) return Bad(manifest, line, kUnclosed);
      if (record.size() + 1 + text.size() > kMaxManifestRowBytes) {
        return Bad(manifest, line,
                   absl::StrCat("the row is longer than ", kMaxManifestRowBytes,
                                " bytes, the most a manifest row may be"));
      }
      absl::StrAppend(&record, "\n", text);
    }
    if (fields.empty()) continue;
    if (!columns) {
      STOKER_ASSIGN_OR_RETURN(columns,
                              ReadHeader(fields, wanted, manifest, line));
      continue;
    }
    STOKER_RETURN_IF_ERROR(CsvRow(fields, *columns, manifest, line, &row));
    STOKER_RETURN_IF_ERROR(sink(row));
  }
  if (!columns) return Bad(manifest, lines.line() + 1, "no header row");
  return absl::OkStatus();
}

absl::Status ParseJsonLinesManifest(ManifestLines& lines,
                                    const std::string& manifest,
                                    const RowSink& sink,
                                    const ManifestColumns& wanted) {
  simdjson::dom::parser parser;
  ManifestRow row;
  absl::string_view content;
  for (;;) {
    STOKER_ASSIGN_OR_RETURN(const bool more, lines.Next(&content));
    if (!more) break;
    const uint64_t line = lines.line();
    if (absl::StripAsciiWhitespace(content).empty()) continue;
    simdjson::dom::object object;
    if (auto error = parser.parse(content.data(), content.size()).get(object);
        error) {
      return Bad(manifest, line,
                 absl::StrCat("is not a JSON object: ",
                              simdjson::error_message(error)));
    }
    std::string_view path;
    simdjson::dom::element named;
    row.has_path = object[wanted.path].get(named) == simdjson::SUCCESS;
    if ((row.has_path || wanted.labels) &&
        named.get(path) != simdjson::SUCCESS) {
      return Bad(manifest, line,
                 absl::StrCat("has no \"", absl::CHexEscape(wanted.path),
                              "\" string"));
    }
    row.line = line;
    row.path = std::string(path);
    row.label = 0;
    row.class_name.reset();
    if (wanted.labels) {
      STOKER_RETURN_IF_ERROR(ReadJsonLabel(manifest, object, line, &row));
    }
    row.values.clear();
    for (size_t i = 0; i < wanted.values.size(); ++i) {
      const std::string& key = wanted.values[i];
      simdjson::dom::element value;
      std::string_view text;
      if (object[key].get(value) != simdjson::SUCCESS) {
        row.values.push_back(std::nullopt);
      } else if (i >= wanted.value_paths.size() || !wanted.value_paths[i]) {
        row.values.push_back(simdjson::minify(value));
      } else if (value.get(text) == simdjson::SUCCESS) {
        row.values.push_back(std::string(text));
      } else {
        return Bad(manifest, line,
                   absl::StrCat("\"", absl::CHexEscape(key),
                                "\" is not a string (a file's path)"));
      }
    }
    STOKER_RETURN_IF_ERROR(CheckNames(row, manifest));
    STOKER_RETURN_IF_ERROR(sink(row));
  }
  return absl::OkStatus();
}

}  // namespace stoker
