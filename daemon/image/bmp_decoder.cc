#include "daemon/image/bmp_decoder.h"

#include <array>
#include <bit>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "daemon/image/whole_image.h"

namespace stoker {
namespace {

constexpr uint32_t kRaw = 0, kRle8 = 1, kRle4 = 2, kBitfields = 3;

uint32_t Le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t Le32(const uint8_t* p) { return Le16(p) | Le16(p + 2) << 16; }

// Whether `n` bytes from `at` lie inside `file`.
bool Has(std::span<const uint8_t> file, uint64_t at, uint64_t n) {
  return at <= file.size() && n <= file.size() - at;
}

absl::Status Unsupported(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported BMP: ", what));
}
absl::Status Corrupt(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("corrupt BMP: ", what));
}

// The headers, read as Pillow's BmpImagePlugin reads them.
struct BmpInfo {
  uint32_t header_size = 0;
  uint64_t width = 0;
  uint64_t height = 0;
  bool top_down = false;
  int bits = 0;
  uint32_t compression = kRaw;
  uint64_t colors = 0;  // 0: 2^bits
  int palette_padding = 4;
  std::array<uint32_t, 4> masks = {};  // R, G, B, A (BI_BITFIELDS)
  uint64_t offset = 0;                 // bfOffBits
  uint64_t pos = 0;                    // where the headers end
};

// How the pixels become RGB.
struct BmpPixels {
  uint64_t data = 0;  // offset of the first stored row
  std::array<uint8_t, 768> palette;
  // 24 and 32 bits: the bytes of a pixel that hold R, G and B.
  int r = 2, g = 1, b = 0;
};

absl::Status ReadInfo(std::span<const uint8_t> f, BmpInfo* info) {
  if (f.size() < 18) return Corrupt("truncated header");
  info->offset = Le32(&f[10]);
  const uint32_t hsz = info->header_size = Le32(&f[14]);
  if (hsz != 12 && hsz != 40 && hsz != 64 && hsz != 108 && hsz != 124) {
    return Unsupported(absl::StrCat("header size ", hsz));
  }
  if (!Has(f, 14, hsz)) return Corrupt("truncated header");
  const uint8_t* h = &f[18];  // the header, after its size
  info->pos = 14 + hsz;
  if (hsz == 12) {  // OS/2 1.x
    info->width = Le16(h);
    info->height = Le16(h + 2);
    info->bits = int(Le16(h + 6));
    info->palette_padding = 3;
    return absl::OkStatus();
  }
  info->top_down = h[7] == 0xff;
  info->width = Le32(h);
  info->height = info->top_down ? (uint64_t{1} << 32) - Le32(h + 4)
                                : uint64_t{Le32(h + 4)};
  info->bits = int(Le16(h + 10));
  info->compression = Le32(h + 12);
  info->colors = Le32(h + 28);
  if (info->compression != kBitfields) return absl::OkStatus();
  if (hsz >= 56) {
    for (int i = 0; i < 4; ++i) info->masks[i] = Le32(h + 36 + 4 * i);
  } else {  // BITMAPINFOHEADER: three masks follow it
    if (!Has(f, info->pos, 12)) return Corrupt("truncated masks");
    for (int i = 0; i < 3; ++i) info->masks[i] = Le32(&f[info->pos + 4 * i]);
    info->pos += 12;
  }
  return absl::OkStatus();
}

// Where R, G and B lie for the 32-bit BI_BITFIELDS masks Pillow reads.
absl::Status ChooseMasks(const BmpInfo& info, BmpPixels* px) {
  using Masks = std::array<uint32_t, 4>;
  constexpr Masks kKnown[] = {{0xff0000, 0xff00, 0xff, 0},
                              {0xff000000, 0xff0000, 0xff00, 0},
                              {0xff000000, 0xff0000, 0xff00, 0xff},
                              {0xff, 0xff00, 0xff0000, 0xff000000},
                              {0xff0000, 0xff00, 0xff, 0xff000000},
                              {0, 0, 0, 0}};
  for (const Masks& known : kKnown) {
    if (info.masks != known) continue;
    if (known[0] != 0) {  // {0, 0, 0, 0} is read as BGRA
      px->r = std::countr_zero(known[0]) / 8;
      px->g = std::countr_zero(known[1]) / 8;
      px->b = std::countr_zero(known[2]) / 8;
    }
    return absl::OkStatus();
  }
  return Unsupported("bit field masks");
}

absl::Status ChoosePixels(const BmpInfo& info, BmpPixels* px) {
  const int bits = info.bits;
  if (bits != 1 && bits != 4 && bits != 8 && bits != 16 && bits != 24 &&
      bits != 32) {
    return Unsupported(absl::StrCat("pixel depth ", bits));
  }
  if (bits == 16) return Unsupported("16-bit pixels");
  switch (info.compression) {
    case kRaw:
      return absl::OkStatus();
    case kBitfields:
      if (bits == 32) return ChooseMasks(info, px);
      if (bits == 24 && info.masks[0] == 0xff0000 && info.masks[1] == 0xff00 &&
          info.masks[2] == 0xff) {
        return absl::OkStatus();
      }
      return Unsupported("bit field masks");
    case kRle8:
    case kRle4:
      return Unsupported("RLE compression");
    default:
      return Unsupported(absl::StrCat("compression ", info.compression));
  }
}

// Reads the palette after the headers. Entries past the stored ones stay
// black (Pillow >= 10.1) or keep Pillow's initial grey ramp (before).
absl::Status ReadPalette(std::span<const uint8_t> f, bool tail_black,
                         BmpInfo* info, BmpPixels* px) {
  for (int i = 0; i < 256; ++i) {
    px->palette[3 * i] = px->palette[3 * i + 1] = px->palette[3 * i + 2] =
        tail_black ? 0 : uint8_t(i);
  }
  const uint64_t colors = info->colors;
  if (colors > (uint64_t{1} << info->bits)) {
    return Unsupported(absl::StrCat(colors, " palette colours for ", info->bits,
                                    "-bit pixels"));
  }
  const int pad = info->palette_padding;
  if (!Has(f, info->pos, colors * pad)) return Corrupt("truncated palette");
  const uint8_t* p = &f[info->pos];
  bool grey = true;
  for (uint64_t i = 0; i < colors; ++i) {
    const uint8_t* entry = p + i * pad;  // B, G, R
    const uint8_t want = colors == 2 ? uint8_t(i * 255) : uint8_t(i);
    grey = grey && entry[0] == want && entry[1] == want && entry[2] == want;
    px->palette[3 * i] = entry[2];
    px->palette[3 * i + 1] = entry[1];
    px->palette[3 * i + 2] = entry[0];
  }
  // Pillow drops a grey palette and reads the pixels as mode "1" (two
  // colours) or "L" (any other count), right only for these depths.
  if (grey && !(info->bits == 1 && colors == 2) &&
      !(info->bits == 8 && colors != 2)) {
    return Unsupported(absl::StrCat("a grey palette of ", colors,
                                    " colours for ", info->bits,
                                    "-bit pixels (Pillow misreads it)"));
  }
  info->pos += colors * pad;
  return absl::OkStatus();
}

absl::Status Layout(std::span<const uint8_t> f, bool tail_black, BmpInfo* info,
                    BmpPixels* px) {
  if (absl::Status ok = ReadInfo(f, info); !ok.ok()) return ok;
  if (absl::Status ok = ChoosePixels(*info, px); !ok.ok()) return ok;
  if (info->bits <= 8) {
    if (info->colors == 0) info->colors = uint64_t{1} << info->bits;
    if (info->offset == 14 + info->header_size) {
      info->offset += 4 * info->colors;  // as Pillow does, even for OS/2
    }
    if (absl::Status ok = ReadPalette(f, tail_black, info, px); !ok.ok()) {
      return ok;
    }
  }
  px->data = info->offset != 0 ? info->offset : info->pos;
  return absl::OkStatus();
}

void DecodeRow(const uint8_t* src, int bits, const BmpPixels& px, int width,
               uint8_t* dst) {
  if (bits >= 24) {
    const int step = bits / 8;
    for (int x = 0; x < width; ++x, src += step, dst += 3) {
      dst[0] = src[px.r];
      dst[1] = src[px.g];
      dst[2] = src[px.b];
    }
    return;
  }
  for (int x = 0; x < width; ++x, dst += 3) {
    const int index = bits == 8   ? src[x]
                      : bits == 4 ? (src[x / 2] >> (x % 2 ? 0 : 4)) & 15
                                  : (src[x / 8] >> (7 - x % 8)) & 1;
    const uint8_t* rgb = &px.palette[3 * index];
    dst[0] = rgb[0];
    dst[1] = rgb[1];
    dst[2] = rgb[2];
  }
}

}  // namespace

bool IsBmp(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 'B' && bytes[1] == 'M';
}

absl::Status BmpDecoder::DecodeRegion(
    std::span<const uint8_t> bmp,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  BmpInfo info;
  BmpPixels px;
  if (absl::Status ok = Layout(bmp, palette_tail_black_, &info, &px);
      !ok.ok()) {
    return ok;
  }
  if (absl::Status ok = CheckImageSize("BMP", info.width, info.height, limits_);
      !ok.ok()) {
    return ok;
  }
  const uint64_t row_bits = info.width * uint64_t(info.bits);
  const uint64_t stride = ((row_bits + 31) >> 3) & ~uint64_t{3};
  // Pillow needs every row but the last one's padding.
  if (!Has(bmp, px.data, stride * (info.height - 1) + (row_bits + 7) / 8)) {
    return Corrupt("truncated pixel data");
  }
  const ImageSize size{int(info.width), int(info.height)};
  const Region r = PlanRegion(plan, size);
  buffer->resize(size.Pixels() * 3);
  for (int y = 0; y < size.height; ++y) {
    const uint64_t stored = info.top_down ? y : size.height - 1 - y;
    DecodeRow(&bmp[px.data + stored * stride], info.bits, px, size.width,
              buffer->data() + size_t(y) * size.width * 3);
  }
  PointAtRegion(buffer->data(), size, r, out);
  return absl::OkStatus();
}

}  // namespace stoker
