#include "daemon/os/byte_size.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

constexpr char kUnits[] = "KMGT";

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  int shift = 0;
  if (!text.empty()) {
    const char unit = absl::ascii_toupper(text.back());
    for (int i = 0; kUnits[i] != '\0'; ++i) {
      if (unit == kUnits[i]) {
        shift = 10 * (i + 1);
        text.remove_suffix(1);
        break;
      }
    }
  }
  uint64_t value = 0;
  if (text.empty() || !absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", std::string(text), "' is not a byte size (e.g. 8G, 512M, 4096)"));
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return absl::InvalidArgumentError("byte size out of range");
  }
  return value << shift;
}

std::string FormatByteSize(uint64_t bytes) {
  if (bytes == 0) return "0";
  int unit = -1;
  while (unit < 3 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return unit < 0 ? absl::StrCat(bytes)
                  : absl::StrCat(bytes, std::string(1, kUnits[unit]));
}

}  // namespace stoker
