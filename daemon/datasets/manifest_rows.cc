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

struct Columns {
  int path = -1;
  int label = -1;
  int class_name = -1;
};

absl::StatusOr<Columns> ReadHeader(const std::vector<std::string>& header,
                                   const std::string& manifest, uint64_t line) {
  Columns columns;
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "path") columns.path = int(i);
    if (header[i] == "label") columns.label = int(i);
    if (header[i] == "class") columns.class_name = int(i);
  }
  if (columns.path < 0 || columns.label < 0) {
    return Bad(manifest, line,
               "the header row must name the columns \"path\" and \"label\" "
               "(and may name \"class\")");
  }
  return columns;
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

}  // namespace

absl::Status ParseCsvManifest(absl::string_view text,
                              const std::string& manifest, const RowSink& row) {
  return ParseCsvManifest(*LinesOfText(text, manifest), manifest, row);
}

absl::Status ParseJsonLinesManifest(absl::string_view text,
                                    const std::string& manifest,
                                    const RowSink& row) {
  return ParseJsonLinesManifest(*LinesOfText(text, manifest), manifest, row);
}

absl::Status ParseCsvManifest(ManifestLines& lines, const std::string& manifest,
                              const RowSink& sink) {
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
      STOKER_ASSIGN_OR_RETURN(columns, ReadHeader(fields, manifest, line));
      continue;
    }
    const int needed =
        std::max({columns->path, columns->label, columns->class_name}) + 1;
    if (int(fields.size()) < needed) {
      return Bad(manifest, line,
                 absl::StrCat("has ", fields.size(),
                              " fields; the header "
                              "needs at least ",
                              needed));
    }
    row.line = line;
    row.path = fields[columns->path];
    STOKER_RETURN_IF_ERROR(
        ParseLabel(manifest, line, fields[columns->label], &row.label));
    row.class_name.reset();
    if (columns->class_name >= 0) row.class_name = fields[columns->class_name];
    STOKER_RETURN_IF_ERROR(CheckNames(row, manifest));
    STOKER_RETURN_IF_ERROR(sink(row));
  }
  if (!columns) return Bad(manifest, lines.line() + 1, "no header row");
  return absl::OkStatus();
}

absl::Status ParseJsonLinesManifest(ManifestLines& lines,
                                    const std::string& manifest,
                                    const RowSink& sink) {
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
    if (object["path"].get(path) != simdjson::SUCCESS) {
      return Bad(manifest, line, "has no \"path\" string");
    }
    simdjson::dom::element label;
    if (object["label"].get(label) != simdjson::SUCCESS) {
      return Bad(manifest, line, "has no \"label\"");
    }
    if (label.get(row.label) != simdjson::SUCCESS) {
      return Bad(manifest, line,
                 absl::StrCat("the label ", Quote(simdjson::minify(label)),
                              " is not an integer"));
    }
    row.line = line;
    row.path = std::string(path);
    row.class_name.reset();
    std::string_view class_name;
    if (object["class"].get(class_name) == simdjson::SUCCESS) {
      row.class_name = std::string(class_name);
    }
    STOKER_RETURN_IF_ERROR(CheckNames(row, manifest));
    STOKER_RETURN_IF_ERROR(sink(row));
  }
  return absl::OkStatus();
}

}  // namespace stoker
