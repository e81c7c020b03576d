#include "daemon/datasets/shard_table.h"

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "simdjson.h"

namespace stoker {
namespace {

absl::Status Bad(absl::string_view path, uint64_t line, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("shard index ", path, " line ", line, ": ", why));
}

}  // namespace

absl::string_view ShardTable::name(size_t i) const {
  const uint32_t from = i == 0 ? 0 : name_end_[i - 1];
  return absl::string_view(names_).substr(from, name_end_[i] - from);
}

absl::string_view ShardTable::version(size_t i) const {
  const uint32_t from = i == 0 ? 0 : version_end_[i - 1];
  return absl::string_view(versions_).substr(from, version_end_[i] - from);
}

uint64_t ShardTable::MemoryBytes() const {
  return sizeof(*this) + names_.capacity() + versions_.capacity() +
         4 * (name_end_.capacity() + version_end_.capacity() +
              samples_->capacity()) +
         8 * sizes_.capacity();
}

absl::Status ShardTable::Builder::Add(absl::string_view name,
                                      const ShardInfo& info) {
  ShardTable& t = *table_;
  constexpr uint64_t kMax = std::numeric_limits<uint32_t>::max();
  if (t.names_.size() + name.size() > kMax ||
      t.versions_.size() + info.version.size() > kMax) {
    return absl::ResourceExhaustedError(
        "the shards' names or versions pass 4 GiB");
  }
  t.names_.append(name.data(), name.size());
  t.versions_.append(info.version);
  t.name_end_.push_back(uint32_t(t.names_.size()));
  t.version_end_.push_back(uint32_t(t.versions_.size()));
  t.sizes_.push_back(info.size);
  t.samples_->push_back(info.samples);
  t.total_ += info.samples;
  return absl::OkStatus();
}

std::shared_ptr<const ShardTable> ShardTable::Builder::Build() {
  ShardTable& t = *table_;
  t.names_.shrink_to_fit();
  t.versions_.shrink_to_fit();
  t.name_end_.shrink_to_fit();
  t.version_end_.shrink_to_fit();
  t.sizes_.shrink_to_fit();
  t.samples_->shrink_to_fit();
  return std::exchange(table_, std::make_shared<ShardTable>());
}

absl::string_view DirectoryOf(absl::string_view name) {
  const size_t slash = name.rfind('/');
  return slash == absl::string_view::npos ? absl::string_view()
                                          : name.substr(0, slash);
}

std::string ResolveAgainst(absl::string_view dir, absl::string_view name) {
  if (absl::StartsWith(name, "/") ||
      name.find("://") != absl::string_view::npos || dir.empty()) {
    return std::string(name);
  }
  return absl::StrCat(dir, "/", name);
}

absl::StatusOr<absl::flat_hash_map<std::string, ShardInfo>> ParseShardIndex(
    absl::string_view text, absl::string_view path) {
  absl::flat_hash_map<std::string, ShardInfo> shards;
  const absl::string_view dir = DirectoryOf(path);
  uint64_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (line_number == 1) {
      if (line != kShardIndexHeader) {
        return Bad(
            path, 1,
            absl::StrCat("does not start with '", kShardIndexHeader, "'"));
      }
      continue;
    }
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    ShardInfo info;
    uint64_t samples = 0;
    if (fields.size() != 4 || fields[0].empty()) {
      return Bad(path, line_number,
                 "is not <name> TAB <samples> TAB <size> TAB <version>");
    }
    if (!absl::SimpleAtoi(fields[1], &samples) ||
        samples > std::numeric_limits<uint32_t>::max() ||
        !absl::SimpleAtoi(fields[2], &info.size)) {
      return Bad(path, line_number,
                 "its sample count or size is not a number (a count is "
                 "below 2^32)");
    }
    info.samples = uint32_t(samples);
    if (fields[3] != "-") info.version = std::string(fields[3]);
    if (!shards.emplace(ResolveAgainst(dir, fields[0]), std::move(info))
             .second) {
      return Bad(path, line_number,
                 absl::StrCat("names shard '", fields[0], "' again"));
    }
  }
  if (line_number == 0) return Bad(path, 1, "is empty");
  return shards;
}

std::string ShardIndexLine(absl::string_view name, const ShardInfo& info) {
  return absl::StrCat(name, "\t", info.samples, "\t", info.size, "\t",
                      info.version.empty() ? "-" : info.version);
}

absl::StatusOr<absl::flat_hash_map<std::string, ShardInfo>> ParseSizesJson(
    absl::string_view text, absl::string_view path) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", why,
        " (open_clip's sizes.json is one object of shard file names and "
        "their sample counts)"));
  };
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (auto error = parser.parse(text.data(), text.size()).get(object); error) {
    return bad(simdjson::error_message(error));
  }
  absl::flat_hash_map<std::string, ShardInfo> shards;
  const absl::string_view dir = DirectoryOf(path);
  for (auto [json_key, value] : object) {
    const absl::string_view key(json_key.data(), json_key.size());
    uint64_t samples = 0;
    if (value.get(samples) != simdjson::SUCCESS ||
        samples > std::numeric_limits<uint32_t>::max()) {
      return bad(absl::StrCat("the count of '", key,
                              "' is not an integer in [0, 2^32)"));
    }
    shards[ResolveAgainst(dir, key)] = {.samples = uint32_t(samples)};
  }
  return shards;
}

}  // namespace stoker
