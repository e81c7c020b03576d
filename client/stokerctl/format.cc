#include "client/stokerctl/format.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stoker::ctl {

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (row.size() > widths.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string Bytes(uint64_t bytes) {
  static constexpr char kUnits[] = "KMGTP";
  if (bytes < 1024) return absl::StrCat(bytes);
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return value < 10 ? absl::StrFormat("%.1f%c", value, kUnits[unit])
                    : absl::StrFormat("%.0f%c", value, kUnits[unit]);
}

std::string Duration(uint64_t millis) {
  const uint64_t seconds = millis / 1000;
  const uint64_t days = seconds / 86400;
  const uint64_t hours = seconds / 3600 % 24;
  const uint64_t minutes = seconds / 60 % 60;
  if (days > 0) return absl::StrFormat("%dd%dh", days, hours);
  if (hours > 0) return absl::StrFormat("%dh%02dm", hours, minutes);
  if (minutes > 0) return absl::StrFormat("%dm%02ds", minutes, seconds % 60);
  return absl::StrFormat("%ds", seconds);
}

std::string Rate(double per_second) {
  return per_second >= 100 ? absl::StrFormat("%.0f", per_second)
                           : absl::StrFormat("%.1f", per_second);
}

std::string Percent(double percent) {
  if (percent < 0) return "-";
  return absl::StrFormat("%.0f%%", percent);
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char ch : text) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", ch);
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

std::string ProgressBar(double done, int width) {
  const int filled = static_cast<int>(std::clamp(done, 0.0, 1.0) * width + 0.5);
  return absl::StrCat("[", std::string(filled, '#'),
                      std::string(width - filled, '.'), "]");
}

}  // namespace stoker::ctl
