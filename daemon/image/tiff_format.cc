#include "daemon/image/tiff_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace stoker {
namespace {

absl::Status Unsupported(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("unsupported TIFF: ", what));
}

using Extras = std::vector<uint16_t>;

bool IsLowDepth(int bits) {
  return bits == 1 || bits == 2 || bits == 4 || bits == 8;
}

std::string Describe(const TiffTags& t) {
  return absl::StrCat(t.samples_per_pixel, " samples of ", t.bits_per_sample,
                      " bits, extra samples {",
                      absl::StrJoin(t.extra_samples, ","), "}");
}

// Photometric 0 and 1: L (1, 2, 4 or 8 bits) or LA (8 bits, unassociated).
absl::Status ChooseGray(const TiffTags& t, TiffFormat* f) {
  f->kind = TiffFormat::Kind::kGray;
  f->invert = t.photometric == 0;
  f->bits = t.bits_per_sample;
  f->samples = t.samples_per_pixel;
  if (f->samples == 1 && t.extra_samples.empty() && IsLowDepth(f->bits)) {
    return absl::OkStatus();
  }
  if (t.photometric == 1 && f->samples == 2 && f->bits == 8 &&
      t.extra_samples == Extras{2}) {
    return absl::OkStatus();
  }
  return Unsupported(absl::StrCat("greyscale with ", Describe(t)));
}

// Photometric 3: P (1, 2, 4 or 8 bits) or PA (8 bits, unassociated).
absl::Status ChoosePalette(const TiffTags& t, TiffFormat* f) {
  f->kind = TiffFormat::Kind::kPalette;
  f->bits = t.bits_per_sample;
  f->samples = t.samples_per_pixel;
  const bool plain =
      f->samples == 1 && t.extra_samples.empty() && IsLowDepth(f->bits);
  const bool alpha =
      f->samples == 2 && f->bits == 8 && t.extra_samples == Extras{2};
  if (!plain && !alpha) {
    return Unsupported(absl::StrCat("palette with ", Describe(t)));
  }
  if (t.colormap[0] == nullptr || t.colormap[1] == nullptr ||
      t.colormap[2] == nullptr) {
    return absl::InvalidArgumentError("corrupt TIFF: palette without colours");
  }
  for (int i = 0; i < (1 << f->bits); ++i) {  // Pillow keeps the high byte
    for (int c = 0; c < 3; ++c) f->palette[3 * i + c] = t.colormap[c][i] >> 8;
  }
  return absl::OkStatus();
}

// Photometric 2: 8-bit RGB, and up to three extra samples, the first of
// which may be alpha (associated or not); Pillow's keys exactly.
absl::Status ChooseRgb(const TiffTags& t, TiffFormat* f) {
  f->kind = TiffFormat::Kind::kRgb;
  f->bits = 8;
  f->samples = t.samples_per_pixel;
  const Extras& e = t.extra_samples;
  bool known = false;
  if (t.bits_per_sample == 8) {
    switch (f->samples) {
      case 3:
        known = e.empty();
        break;
      case 4:
        known = e.empty() || (e.size() == 1 && e[0] <= 2);
        break;
      case 5:
      case 6:
        known = e.size() == size_t(f->samples - 3) && e[0] <= 2 &&
                (e.size() < 2 || e[1] == 0) && (e.size() < 3 || e[2] == 0);
        break;
    }
  }
  if (!known) return Unsupported(absl::StrCat("RGB with ", Describe(t)));
  f->premultiplied = !e.empty() && e[0] == 1;
  return absl::OkStatus();
}

absl::Status CheckCompression(uint16_t compression) {
  switch (compression) {
    case 1:      // none
    case 2:      // CCITT modified Huffman RLE
    case 3:      // CCITT group 3
    case 4:      // CCITT group 4
    case 5:      // LZW
    case 8:      // deflate (Adobe)
    case 32773:  // PackBits
    case 32946:  // deflate (old code)
      return absl::OkStatus();
    default:
      return Unsupported(absl::StrCat("compression ", compression));
  }
}

absl::string_view PhotometricName(uint16_t photometric) {
  switch (photometric) {
    case 4:
      return "transparency mask";
    case 5:
      return "CMYK (separated)";
    case 6:
      return "YCbCr";
    case 8:
    case 9:
    case 10:
      return "CIE Lab";
    default:
      return "unknown";
  }
}

uint8_t Unpremultiply(int value, int alpha) {  // Pillow's unpackRGBa
  const int v = value * 255 / alpha;
  return uint8_t(v > 255 ? 255 : v);
}

}  // namespace

absl::Status ChooseTiffFormat(const TiffTags& t, TiffFormat* f) {
  if (t.sample_format != 1) {
    return Unsupported(absl::StrCat("sample format ", t.sample_format,
                                    " (only unsigned integers)"));
  }
  if (t.bits_per_sample > 8) {
    return Unsupported(absl::StrCat(t.bits_per_sample, "-bit samples"));
  }
  if (t.fill_order != 1) return Unsupported("bit-reversed fill order");
  if (t.planar_config != 1 && t.samples_per_pixel > 1) {
    return Unsupported("separate sample planes");
  }
  if (absl::Status ok = CheckCompression(t.compression); !ok.ok()) return ok;
  switch (t.photometric) {
    case 0:
    case 1:
      return ChooseGray(t, f);
    case 2:
      return ChooseRgb(t, f);
    case 3:
      return ChoosePalette(t, f);
    default:
      return Unsupported(absl::StrCat("photometric interpretation ",
                                      t.photometric, " (",
                                      PhotometricName(t.photometric), ")"));
  }
}

void ConvertTiffRow(const TiffFormat& f, const uint8_t* src, int count,
                    uint8_t* dst) {
  if (f.kind == TiffFormat::Kind::kRgb) {
    for (int x = 0; x < count; ++x, src += f.samples, dst += 3) {
      const int a = f.premultiplied ? src[3] : 255;
      for (int c = 0; c < 3; ++c) {
        dst[c] = a == 255 ? src[c] : a == 0 ? 0 : Unpremultiply(src[c], a);
      }
    }
    return;
  }
  const int max = (1 << f.bits) - 1;
  for (int x = 0; x < count; ++x, dst += 3) {
    const int bit = x * f.bits;  // bits < 8: one sample a pixel
    int v = f.bits == 8 ? src[x * f.samples]
                        : (src[bit / 8] >> (8 - f.bits - bit % 8)) & max;
    if (f.kind == TiffFormat::Kind::kPalette) {
      dst[0] = f.palette[3 * v];
      dst[1] = f.palette[3 * v + 1];
      dst[2] = f.palette[3 * v + 2];
    } else {
      v = v * 255 / max;
      dst[0] = dst[1] = dst[2] = uint8_t(f.invert ? 255 - v : v);
    }
  }
}

}  // namespace stoker
