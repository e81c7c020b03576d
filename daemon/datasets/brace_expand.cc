#include "daemon/datasets/brace_expand.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace stoker {
namespace {

// The first "{...}" whose braces match, as [open, close].
std::optional<std::pair<size_t, size_t>> FirstGroup(absl::string_view s) {
  for (size_t open = s.find('{'); open != absl::string_view::npos;
       open = s.find('{', open + 1)) {
    int depth = 0;
    for (size_t i = open; i < s.size(); ++i) {
      if (s[i] == '{') ++depth;
      if (s[i] == '}' && --depth == 0) return std::make_pair(open, i);
    }
  }
  return std::nullopt;
}

// The items of a group's inside, split at its top-level commas.
std::vector<std::string> Items(absl::string_view inside) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : inside) {
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      items.emplace_back();
    } else {
      items.back() += c;
    }
  }
  return items;
}

bool Padded(absl::string_view n) {
  if (n == "0" || n == "-0") return false;
  return absl::StartsWith(n, "0") || absl::StartsWith(n, "-0");
}

// "a..b" or "a..b..step" with integer ends: its items, or nullopt.
std::optional<std::vector<std::string>> Range(absl::string_view inside,
                                              size_t max_items) {
  std::vector<absl::string_view> parts = absl::StrSplit(inside, "..");
  if (parts.size() != 2 && parts.size() != 3) return std::nullopt;
  int64_t from = 0, to = 0, step = 1;
  if (!absl::SimpleAtoi(parts[0], &from) || !absl::SimpleAtoi(parts[1], &to) ||
      (parts.size() == 3 && !absl::SimpleAtoi(parts[2], &step))) {
    return std::nullopt;
  }
  if (absl::StartsWith(parts[0], "+") || absl::StartsWith(parts[1], "+") ||
      from < -(int64_t{1} << 40) || from > (int64_t{1} << 40) ||
      to < -(int64_t{1} << 40) || to > (int64_t{1} << 40) ||
      step < -(int64_t{1} << 40) || step > (int64_t{1} << 40)) {
    return std::nullopt;
  }
  step = step == 0 ? 1 : std::abs(step);
  const int width = Padded(parts[0]) || Padded(parts[1])
                        ? int(std::max(parts[0].size(), parts[1].size()))
                        : 0;
  std::vector<std::string> items;
  const int64_t sign = to >= from ? 1 : -1;
  for (int64_t v = from; sign * (to - v) >= 0; v += sign * step) {
    if (items.size() > max_items) break;  // the caller reports it
    items.push_back(v < 0 ? absl::StrFormat("-%0*d", std::max(width - 1, 0), -v)
                          : absl::StrFormat("%0*d", width, v));
  }
  return items;
}

// One pattern's expansion into *out, within its bounds.
class Expander {
 public:
  Expander(const std::string& whole, size_t max_paths, size_t max_bytes,
           std::vector<std::string>* out)
      : whole_(whole), max_paths_(max_paths), max_bytes_(max_bytes), out_(out) {
    for (const std::string& path : *out) bytes_ += path.size();
  }

  // Appends `done` + the expansion of `rest` (`done` has no group left).
  absl::Status Expand(const std::string& done, const std::string& rest);

 private:
  absl::Status Add(std::string path);

  const std::string& whole_;
  const size_t max_paths_;
  const size_t max_bytes_;
  std::vector<std::string>* const out_;
  size_t bytes_ = 0;
};

absl::Status Expander::Add(std::string path) {
  if (out_->size() >= max_paths_ || bytes_ + path.size() > max_bytes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard pattern '", whole_, "' expands to more than ",
                     out_->size() >= max_paths_
                         ? absl::StrCat(max_paths_, " paths")
                         : absl::StrCat(max_bytes_, " bytes of paths")));
  }
  bytes_ += path.size();
  out_->push_back(std::move(path));
  return absl::OkStatus();
}

absl::Status Expander::Expand(const std::string& done,
                              const std::string& rest) {
  const auto group = FirstGroup(rest);
  if (!group) return Add(done + rest);
  const auto [open, close] = *group;
  const absl::string_view inside =
      absl::string_view(rest).substr(open + 1, close - open - 1);
  std::vector<std::string> items = Items(inside);
  if (items.size() == 1) {
    auto range = Range(inside, max_paths_);
    if (!range) {  // "{x}": kept as written, as braceexpand keeps it
      return Expand(done + rest.substr(0, close + 1), rest.substr(close + 1));
    }
    items = *std::move(range);
  }
  const std::string head = done + rest.substr(0, open);
  const std::string tail = rest.substr(close + 1);
  for (const std::string& item : items) {
    // An item may hold groups of its own: it is expanded with the tail.
    STOKER_RETURN_IF_ERROR(Expand(head, absl::StrCat(item, tail)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ExpandBraces(const std::string& pattern, size_t max_paths,
                          std::vector<std::string>* out, size_t max_bytes) {
  return Expander(pattern, max_paths, max_bytes, out).Expand("", pattern);
}

}  // namespace stoker
