#include "daemon/datasets/webdataset.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "simdjson.h"

namespace stoker {
namespace {

constexpr std::array<absl::string_view, 9> kImageExtensions = {
    "jpg", "jpeg", "png", "webp", "ppm", "pgm", "bmp", "tif", "tiff"};

int ImageRank(const std::string& extension) {
  for (size_t i = 0; i < kImageExtensions.size(); ++i) {
    if (extension == kImageExtensions[i]) return int(i);
  }
  return -1;
}

// (key, lower-cased extension) of a member's name.
std::pair<std::string, std::string> Split(const std::string& name) {
  const size_t slash = name.rfind('/');
  const size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos) return {name, ""};
  return {name.substr(0, dot), absl::AsciiStrToLower(name.substr(dot + 1))};
}

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
  return ImageRank(extension) >= 0;
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
    auto [key, extension] = Split(m.name);
    if (open && key != group.key) {
      STOKER_RETURN_IF_ERROR(grouper.Finish(group, &samples));
      open = false;
    }
    if (!open) {
      group = Group{std::move(key)};
      open = true;
    }
    const int rank = ImageRank(extension);
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

}  // namespace stoker
