#include "daemon/datasets/webdataset.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/image_suffixes.h"
#include "common/status_macros.h"
#include "simdjson.h"

namespace stoker {
namespace {

absl::Status Bad(const std::string& shard, const std::string& key,
                 absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("shard '", shard, "': sample '", key, "' ", what));
}

// Reads a label member (at most `limit` bytes) into *text.
absl::Status ReadMember(int fd, const std::string& shard,
                        const std::string& key, const TarMember& member,
                        uint64_t limit, std::string* text) {
  if (member.size > limit) {
    return Bad(shard, key,
               absl::StrCat("has a label member '", member.name, "' over ",
                            limit, " bytes (", member.size, ")"));
  }
  text->resize(member.size);
  if (!ReadAt(fd, reinterpret_cast<uint8_t*>(text->data()), member.size,
              member.offset)) {
    return Bad(shard, key,
               absl::StrCat("has an unreadable member '", member.name, "'"));
  }
  return absl::OkStatus();
}

// The integer in a "cls" member (surrounding whitespace allowed).
absl::Status ClsLabel(const std::string& shard, const std::string& key,
                      const std::string& text, int64_t* label) {
  const absl::string_view value = absl::StripAsciiWhitespace(text);
  if (!absl::SimpleAtoi(value, label)) {
    return Bad(shard, key,
               absl::StrCat("has a label that is not an integer: '",
                            absl::CHexEscape(value.substr(0, 20)), "'"));
  }
  return absl::OkStatus();
}

// The integer at `field` of a "json" member.
absl::Status JsonLabel(simdjson::dom::parser& parser, const std::string& shard,
                       const std::string& key, const std::string& text,
                       const std::string& field, int64_t* label) {
  simdjson::dom::element doc;
  if (auto error = parser.parse(text).get(doc); error) {
    return Bad(shard, key,
               absl::StrCat("has a json member that does not parse: ",
                            simdjson::error_message(error)));
  }
  simdjson::dom::element value;
  const auto found =
      field.starts_with('/') ? doc.at_pointer(field) : doc[field];
  if (found.get(value) != simdjson::SUCCESS) {
    return Bad(shard, key,
               absl::StrCat("has a json member without the field '",
                            absl::CHexEscape(field), "'"));
  }
  if (value.get_int64().get(*label) != simdjson::SUCCESS) {
    return Bad(
        shard, key,
        absl::StrCat("has a json field '", absl::CHexEscape(field),
                     "' that is not an integer: ",
                     absl::CHexEscape(simdjson::minify(value).substr(0, 40))));
  }
  return absl::OkStatus();
}

struct Group {
  std::string key;
  const TarMember* image = nullptr;
  int image_rank = 0;
  const TarMember* label = nullptr;
};

class Grouper {
 public:
  Grouper(int fd, const std::string& shard, const LabelSource& labels)
      : fd_(fd), shard_(shard), labels_(labels) {}

  const char* label_extension() const {
    return labels_.json_field.empty() ? "cls" : "json";
  }

  absl::Status Finish(const Group& g, std::vector<ShardSample>* out) {
    if (g.image == nullptr) return Bad(shard_, g.key, "has no image member");
    if (g.label == nullptr) {
      return Bad(shard_, g.key,
                 absl::StrCat("has no ", label_extension(), " member (label)"));
    }
    ShardSample sample{g.key, g.image->offset, g.image->size, 0};
    const bool json = !labels_.json_field.empty();
    STOKER_RETURN_IF_ERROR(ReadMember(fd_, shard_, g.key, *g.label,
                                      json ? kMaxLabelJsonBytes : 64, &text_));
    STOKER_RETURN_IF_ERROR(json
                               ? JsonLabel(parser_, shard_, g.key, text_,
                                           labels_.json_field, &sample.label)
                               : ClsLabel(shard_, g.key, text_, &sample.label));
    out->push_back(std::move(sample));
    return absl::OkStatus();
  }

 private:
  const int fd_;
  const std::string& shard_;
  const LabelSource& labels_;
  std::string text_;
  simdjson::dom::parser parser_;
};

}  // namespace

bool IsImageExtension(const std::string& extension) {
  return ImageSuffixRank(extension) >= 0;
}

std::optional<KeySuffix> SplitMemberName(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t base = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = name.find('.', base);
  if (dot == std::string::npos) return std::nullopt;
  // [^.]+ runs from where (?:.*/|) stops to `dot`: just after a slash
  // reached without crossing a newline (which '.' does not match), or the
  // name's start; the latest such place before `dot` is the one to try.
  const size_t newline = name.find('\n');
  size_t start = 0;
  for (size_t s = name.rfind('/', dot - 1); s != std::string::npos && s > 0;
       s = name.rfind('/', s - 1)) {
    if (s + 1 < dot && s < newline) {
      start = s + 1;
      break;
    }
  }
  if (start == 0 && name[0] == '/' && 1 < dot && 0 < newline) start = 1;
  if (start >= dot || name.find('.', start) != dot) return std::nullopt;
  return KeySuffix{name.substr(0, dot),
                   absl::AsciiStrToLower(name.substr(dot + 1))};
}

absl::StatusOr<std::vector<FieldSample>> GroupFieldSamples(
    const std::string& shard, const std::vector<TarMember>& members,
    const std::vector<std::vector<std::string>>& fields, bool skip_missing,
    uint64_t* skipped) {
  std::vector<FieldSample> samples;
  std::string key;
  // The current sample's members, by suffix.
  absl::flat_hash_map<std::string, const TarMember*> group;
  const auto finish = [&] {
    if (group.empty()) return;
    FieldSample sample;
    bool complete = true;
    for (const std::vector<std::string>& suffixes : fields) {
      std::optional<MemberRange> found;
      for (const std::string& suffix : suffixes) {
        auto it = group.find(suffix);
        if (it == group.end()) continue;
        found = MemberRange{0, it->second->offset, it->second->size};
        break;
      }
      complete = complete && found.has_value();
      sample.members.push_back(found);
    }
    group.clear();
    if (!complete && skip_missing) {
      ++*skipped;
    } else {
      samples.push_back(std::move(sample));
    }
  };
  for (const TarMember& m : members) {
    std::optional<KeySuffix> split = SplitMemberName(m.name);
    if (!split) continue;
    if (!group.empty() && split->key != key) finish();
    key = std::move(split->key);
    if (!group.emplace(split->suffix, &m).second) {
      return Bad(shard, key,
                 absl::StrCat("has two members with the suffix '",
                              absl::CHexEscape(split->suffix),
                              "' (webdataset refuses them too)"));
    }
  }
  finish();
  return samples;
}

absl::StatusOr<std::vector<ShardSample>> GroupShardSamples(
    int fd, const std::string& shard, const std::vector<TarMember>& members,
    const LabelSource& labels) {
  Grouper grouper(fd, shard, labels);
  const std::string label_extension = grouper.label_extension();
  std::vector<ShardSample> samples;
  Group group;
  bool open = false;
  for (const TarMember& m : members) {
    std::optional<KeySuffix> split = SplitMemberName(m.name);
    if (!split) continue;
    auto& [key, extension] = *split;
    if (open && key != group.key) {
      STOKER_RETURN_IF_ERROR(grouper.Finish(group, &samples));
      open = false;
    }
    if (!open) {
      group = Group{std::move(key)};
      open = true;
    }
    const int rank = ImageSuffixRank(extension);
    if (rank >= 0 && (group.image == nullptr || rank < group.image_rank)) {
      group.image = &m;
      group.image_rank = rank;
    } else if (extension == label_extension) {
      group.label = &m;
    }
  }
  if (open) STOKER_RETURN_IF_ERROR(grouper.Finish(group, &samples));
  return samples;
}

uint64_t CountSampleKeys(const std::vector<TarMember>& members) {
  uint64_t samples = 0;
  std::string key;
  for (const TarMember& m : members) {
    std::optional<KeySuffix> split = SplitMemberName(m.name);
    if (!split) continue;
    if (samples == 0 || split->key != key) {
      ++samples;
      key = std::move(split->key);
    }
  }
  return samples;
}

}  // namespace stoker
