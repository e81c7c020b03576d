#include "daemon/jobs/webdataset.h"

#include <array>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

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

// The integer in a "cls" member (surrounding whitespace allowed).
absl::Status ReadLabel(int fd, const std::string& shard, const std::string& key,
                       const TarMember& cls, int64_t* label) {
  if (cls.size > 64) return Bad(shard, key, "has a cls member over 64 bytes");
  char text[64];
  if (!ReadAt(fd, reinterpret_cast<uint8_t*>(text), cls.size, cls.offset)) {
    return Bad(shard, key, "has an unreadable cls member");
  }
  const absl::string_view value =
      absl::StripAsciiWhitespace(absl::string_view(text, cls.size));
  if (!absl::SimpleAtoi(value, label)) {
    return Bad(shard, key,
               absl::StrCat("has a label that is not an integer: '",
                            absl::CHexEscape(value.substr(0, 20)), "'"));
  }
  return absl::OkStatus();
}

struct Group {
  std::string key;
  const TarMember* image = nullptr;
  int image_rank = 0;
  const TarMember* cls = nullptr;
};

absl::Status Finish(int fd, const std::string& shard, const Group& g,
                    std::vector<ShardSample>* out) {
  if (g.image == nullptr) return Bad(shard, g.key, "has no image member");
  if (g.cls == nullptr) return Bad(shard, g.key, "has no cls member (label)");
  ShardSample sample{g.key, g.image->offset, g.image->size, 0};
  if (absl::Status ok = ReadLabel(fd, shard, g.key, *g.cls, &sample.label);
      !ok.ok()) {
    return ok;
  }
  out->push_back(std::move(sample));
  return absl::OkStatus();
}

}  // namespace

bool IsImageExtension(const std::string& extension) {
  return ImageRank(extension) >= 0;
}

absl::StatusOr<std::vector<ShardSample>> GroupShardSamples(
    int fd, const std::string& shard, const std::vector<TarMember>& members) {
  std::vector<ShardSample> samples;
  Group group;
  bool open = false;
  for (const TarMember& m : members) {
    auto [key, extension] = Split(m.name);
    if (open && key != group.key) {
      if (absl::Status ok = Finish(fd, shard, group, &samples); !ok.ok()) {
        return ok;
      }
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
    } else if (extension == "cls") {
      group.cls = &m;
    }
  }
  if (open) {
    if (absl::Status ok = Finish(fd, shard, group, &samples); !ok.ok()) {
      return ok;
    }
  }
  return samples;
}

}  // namespace stoker
