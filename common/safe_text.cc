#include "common/safe_text.h"

#include <cstdint>
#include <cstdio>

namespace stoker {
namespace {

// Length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0 if
// it does not start with one (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF).
size_t Utf8Length(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xbf;  // range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return n;
}

bool IsControl(uint8_t c) { return c < 0x20 || c == 0x7f; }

}  // namespace

bool IsSafeText(std::string_view text) {
  while (!text.empty()) {
    const size_t n = Utf8Length(text);
    if (n == 0 || (n == 1 && IsControl(static_cast<uint8_t>(text[0])))) {
      return false;
    }
    text.remove_prefix(n);
  }
  return true;
}

std::string SafeText(std::string_view text) {
  if (IsSafeText(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  while (!text.empty()) {
    const size_t n = Utf8Length(text);
    const uint8_t c = static_cast<uint8_t>(text[0]);
    if (n > 1 || (n == 1 && !IsControl(c))) {
      out.append(text.substr(0, n));
      text.remove_prefix(n);
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      char escape[5];
      std::snprintf(escape, sizeof(escape), "\\x%02x", c);
      out += escape;
    }
    text.remove_prefix(1);
  }
  return out;
}

}  // namespace stoker
