// PnmDecoder: decodes binary Netpbm images to 8-bit RGB exactly as
// PIL.Image.open(f).convert("RGB") does (Pillow 9.4's PpmImagePlugin):
// P6 (PPM, RGB) and P5 (PGM, grey replicated) with maxval 255, and P4 (PBM,
// 1 = black). The header is read with Pillow's rules (tokens of at most 10
// characters, '#' comments to the end of the line, one whitespace byte
// before the pixels). Plain (ASCII) P1-P3, maxval other than 255 (Pillow
// rescales those), Pillow's own P0/Py variants and tokens that are not
// plain digits are refused by name; so are truncated files and images over
// the pixel limit, checked from the header before any allocation.
//
// Written here rather than taken from stb_image, whose PNM loader leaves
// the pixels of a truncated file uninitialised, ignores maxval and
// overflows a signed int on long header numbers.
//
// One per worker thread; not thread-safe.
#ifndef STOKER_DAEMON_IMAGE_PNM_DECODER_H_
#define STOKER_DAEMON_IMAGE_PNM_DECODER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/decode_types.h"

namespace stoker {

// "P" and one of "0123456y": what Pillow's PPM plugin accepts.
bool IsPnm(std::span<const uint8_t> bytes);

class PnmDecoder {
 public:
  explicit PnmDecoder(DecodeLimits limits) : limits_(limits) {}

  // Same contract as PngDecoder::DecodeRegion: the whole image is decoded
  // into `buffer` and *out points at the region.
  absl::Status DecodeRegion(
      std::span<const uint8_t> pnm,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

 private:
  const DecodeLimits limits_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PNM_DECODER_H_
