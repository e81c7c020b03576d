#include "daemon/image/pnm_decoder.h"

#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "daemon/image/whole_image.h"

namespace stoker {
namespace {

bool IsSpace(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}

absl::Status Unsupported(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported PNM: ", what));
}
absl::Status Corrupt(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("corrupt PNM: ", what));
}

// Reads the header as Pillow's _read_magic and _read_token do.
class HeaderReader {
 public:
  explicit HeaderReader(std::span<const uint8_t> file) : file_(file) {}

  // Up to 6 bytes, ended by whitespace (consumed) or the end of the file.
  std::string Magic() {
    std::string magic;
    for (int i = 0; i < 6 && at_ < file_.size(); ++i) {
      const uint8_t c = file_[at_++];
      if (IsSpace(c)) break;
      magic += char(c);
    }
    return magic;
  }

  // A header number: a token of digits, after whitespace and comments.
  absl::StatusOr<uint64_t> Number(absl::string_view what) {
    std::string token;
    while (token.size() <= 10 && at_ < file_.size()) {
      const uint8_t c = file_[at_++];
      if (IsSpace(c)) {
        if (token.empty()) continue;
        break;
      }
      if (c == '#') {  // to the end of the line, CR or LF included
        while (at_ < file_.size() && file_[at_] != '\r' && file_[at_] != '\n')
          ++at_;
        if (at_ < file_.size()) ++at_;
        continue;
      }
      token += char(c);
    }
    if (token.empty()) return Corrupt("the header ends early");
    if (token.size() > 10) return Corrupt(absl::StrCat(what, " is too long"));
    uint64_t value = 0;
    for (const char c : token) {
      if (c < '0' || c > '9') {
        return Unsupported(absl::StrCat(what, " '", token, "' is not digits"));
      }
      value = value * 10 + uint64_t(c - '0');
    }
    return value;
  }

  size_t at() const { return at_; }

 private:
  std::span<const uint8_t> file_;
  size_t at_ = 0;
};

struct PnmLayout {
  int channels = 0;  // 1: P4 bits, P5 grey; 3: P6 RGB
  bool bits = false;
  uint64_t width = 0;
  uint64_t height = 0;
  size_t data = 0;
};

absl::Status ReadHeader(std::span<const uint8_t> file, PnmLayout* layout) {
  HeaderReader reader(file);
  const std::string magic = reader.Magic();
  if (magic == "P1" || magic == "P2" || magic == "P3") {
    return Unsupported("plain (ASCII) format " + magic);
  }
  if (magic != "P4" && magic != "P5" && magic != "P6") {
    return Unsupported(absl::StrCat("format '", magic, "'"));
  }
  layout->bits = magic == "P4";
  layout->channels = magic == "P6" ? 3 : 1;
  auto width = reader.Number("width");
  if (!width.ok()) return width.status();
  auto height = reader.Number("height");
  if (!height.ok()) return height.status();
  layout->width = *width;
  layout->height = *height;
  if (!layout->bits) {
    auto maxval = reader.Number("maxval");
    if (!maxval.ok()) return maxval.status();
    if (*maxval == 0 || *maxval > 65535) return Corrupt("maxval out of range");
    if (*maxval != 255) {
      return Unsupported(absl::StrCat("maxval ", *maxval, " (only 255)"));
    }
  }
  layout->data = reader.at();
  return absl::OkStatus();
}

void DecodeRow(const uint8_t* src, const PnmLayout& layout, int width,
               uint8_t* dst) {
  if (layout.channels == 3) {
    std::memcpy(dst, src, size_t(width) * 3);
    return;
  }
  for (int x = 0; x < width; ++x, dst += 3) {
    const uint8_t v =
        layout.bits ? ((src[x / 8] >> (7 - x % 8)) & 1 ? 0 : 255) : src[x];
    dst[0] = dst[1] = dst[2] = v;
  }
}

}  // namespace

bool IsPnm(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 'P' &&
         std::memchr("0123456y", bytes[1], 8) != nullptr;
}

absl::Status PnmDecoder::DecodeRegion(
    std::span<const uint8_t> pnm,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  PnmLayout layout;
  if (absl::Status ok = ReadHeader(pnm, &layout); !ok.ok()) return ok;
  if (absl::Status ok =
          CheckImageSize("PNM", layout.width, layout.height, limits_);
      !ok.ok()) {
    return ok;
  }
  const uint64_t stride =
      layout.bits ? (layout.width + 7) / 8 : layout.width * layout.channels;
  if (layout.data > pnm.size() ||
      pnm.size() - layout.data < stride * layout.height) {
    return Corrupt("truncated pixel data");
  }
  const ImageSize size{int(layout.width), int(layout.height)};
  const Region r = PlanRegion(plan, size);
  buffer->resize(size.Pixels() * 3);
  for (int y = 0; y < size.height; ++y) {
    DecodeRow(&pnm[layout.data + y * stride], layout, size.width,
              buffer->data() + size_t(y) * size.width * 3);
  }
  PointAtRegion(buffer->data(), size, r, out);
  return absl::OkStatus();
}

}  // namespace stoker
