// How TiffDecoder turns the samples libtiff hands out into RGB: which TIFF
// layouts Pillow 9.4 reads (TiffImagePlugin's OPEN_INFO table) and the
// conversion PIL.Image.convert("RGB") then makes. Kept apart from the
// libtiff calls so that the rules can be read, and tested, on their own.
#ifndef STOKER_DAEMON_IMAGE_TIFF_FORMAT_H_
#define STOKER_DAEMON_IMAGE_TIFF_FORMAT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace stoker {

// The tags of a TIFF directory that decide its pixel layout, with the
// defaults Pillow assumes for absent ones.
struct TiffTags {
  uint16_t photometric = 0;  // absent: 0 (MinIsWhite), as Pillow assumes
  uint16_t bits_per_sample = 1;
  uint16_t samples_per_pixel = 1;
  uint16_t sample_format = 1;
  uint16_t planar_config = 1;
  uint16_t fill_order = 1;
  uint16_t compression = 1;
  std::vector<uint16_t> extra_samples;
  // Photometric 3: the ColorMap, 2^bits_per_sample 16-bit entries each.
  const uint16_t* colormap[3] = {nullptr, nullptr, nullptr};
};

struct TiffFormat {
  enum class Kind { kGray, kPalette, kRgb };
  Kind kind = Kind::kRgb;
  int bits = 8;                // per sample: 1, 2, 4 or 8 (8 for kRgb)
  int samples = 3;             // per pixel; extra samples are skipped
  bool invert = false;         // kGray, photometric 0 (MinIsWhite)
  bool premultiplied = false;  // kRgb: the first extra sample is
                               // associated alpha, which Pillow divides out
  std::array<uint8_t, 768> palette = {};  // kPalette: RGB, 256 entries
};

// The layout of `tags` if Pillow reads it and stoker matches it exactly;
// otherwise INVALID_ARGUMENT naming what is not supported (16-bit and float
// samples, CMYK, YCbCr, Lab, separate planes, bit-reversed fill order, JPEG
// and other compressions than none, CCITT, LZW, deflate and PackBits).
absl::Status ChooseTiffFormat(const TiffTags& tags, TiffFormat* format);

// Converts the first `count` pixels of a row of samples (as libtiff
// decodes them, starting on a byte) to packed RGB.
void ConvertTiffRow(const TiffFormat& format, const uint8_t* src, int count,
                    uint8_t* dst);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_TIFF_FORMAT_H_
