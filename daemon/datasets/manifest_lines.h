// The lines of a manifest, read a piece at a time (a manifest is never held
// whole: the index it becomes is what stokerd keeps), each bounded.
#ifndef STOKER_DAEMON_DATASETS_MANIFEST_LINES_H_
#define STOKER_DAEMON_DATASETS_MANIFEST_LINES_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace stoker {

// The longest row a manifest may hold (a CSV row over several lines counts
// whole), and the longest path and class name in a row.
inline constexpr size_t kMaxManifestRowBytes = size_t{64} << 10;
inline constexpr size_t kMaxManifestPathBytes = 4095;  // PATH_MAX less NUL
inline constexpr size_t kMaxManifestClassBytes = 1024;

class ManifestLines {
 public:
  virtual ~ManifestLines() = default;
  // The next line, without its "\n" or "\r\n", into *line (valid until the
  // next call); false at the end. A line longer than kMaxManifestRowBytes
  // is INVALID_ARGUMENT naming `manifest` and the line.
  virtual absl::StatusOr<bool> Next(absl::string_view* line) = 0;
  // The number of the line Next gave last (1-based).
  uint64_t line() const { return line_; }

 protected:
  explicit ManifestLines(std::string manifest)
      : manifest_(std::move(manifest)) {}
  absl::Status TooLong() const;

  const std::string manifest_;
  uint64_t line_ = 0;
};

// Lines of a text in memory, and of the file open at `fd` (read from its
// start, 1 MiB at a time).
std::unique_ptr<ManifestLines> LinesOfText(absl::string_view text,
                                           const std::string& manifest);
std::unique_ptr<ManifestLines> LinesOfFile(int fd, const std::string& manifest);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_MANIFEST_LINES_H_
