#include "daemon/datasets/manifest_lines.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

absl::string_view WithoutCr(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

class TextLines final : public ManifestLines {
 public:
  TextLines(absl::string_view text, const std::string& manifest)
      : ManifestLines(manifest), text_(text) {}

  absl::StatusOr<bool> Next(absl::string_view* line) override {
    if (text_.empty()) return false;
    ++line_;
    const size_t end = text_.find('\n');
    *line = text_.substr(0, end);
    text_.remove_prefix(end == absl::string_view::npos ? text_.size()
                                                       : end + 1);
    if (line->size() > kMaxManifestRowBytes) return TooLong();
    *line = WithoutCr(*line);
    return true;
  }

 private:
  absl::string_view text_;
};

class FileLines final : public ManifestLines {
 public:
  FileLines(int fd, const std::string& manifest)
      : ManifestLines(manifest), fd_(fd) {}

  absl::StatusOr<bool> Next(absl::string_view* line) override {
    size_t end;
    while ((end = buffer_.find('\n', start_)) == std::string::npos && !eof_) {
      if (buffer_.size() - start_ > kMaxManifestRowBytes) {
        ++line_;
        return TooLong();
      }
      buffer_.erase(0, start_);  // the lines given so far are done with
      start_ = 0;
      if (absl::Status read = Fill(); !read.ok()) return read;
    }
    if (start_ >= buffer_.size()) return false;
    ++line_;
    if (end == std::string::npos) end = buffer_.size();  // no final "\n"
    *line = absl::string_view(buffer_).substr(start_, end - start_);
    start_ = end + 1;
    if (line->size() > kMaxManifestRowBytes) return TooLong();
    *line = WithoutCr(*line);
    return true;
  }

 private:
  static constexpr size_t kPiece = size_t{1} << 20;

  absl::Status Fill() {
    const size_t had = buffer_.size();
    buffer_.resize(had + kPiece);
    ssize_t n;
    do {
      n = ::pread(fd_, buffer_.data() + had, kPiece, offset_);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      buffer_.resize(had);
      return absl::DataLossError(
          absl::StrCat("dataset.manifest '", manifest_,
                       "' could not be read: ", std::strerror(errno)));
    }
    buffer_.resize(had + size_t(n));
    offset_ += n;
    eof_ = n == 0;
    return absl::OkStatus();
  }

  const int fd_;
  std::string buffer_;
  size_t start_ = 0;
  off_t offset_ = 0;
  bool eof_ = false;
};

}  // namespace

absl::Status ManifestLines::TooLong() const {
  return absl::InvalidArgumentError(absl::StrCat(
      "manifest '", manifest_, "' line ", line_, ": longer than ",
      kMaxManifestRowBytes, " bytes, the most a manifest row may be"));
}

std::unique_ptr<ManifestLines> LinesOfText(absl::string_view text,
                                           const std::string& manifest) {
  return std::make_unique<TextLines>(text, manifest);
}

std::unique_ptr<ManifestLines> LinesOfFile(int fd,
                                           const std::string& manifest) {
  return std::make_unique<FileLines>(fd, manifest);
}

}  // namespace stoker
