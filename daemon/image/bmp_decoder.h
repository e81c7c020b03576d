// BmpDecoder: decodes Windows and OS/2 bitmaps to 8-bit RGB exactly as
// PIL.Image.open(f).convert("RGB") does (Pillow 9.4's BmpImagePlugin):
// 1-, 4- and 8-bit palette images (palette entries past the header's colour
// count black, as Pillow >= 10.1 leaves them, or Pillow 9's grey ramp; grey
// palettes read as Pillow reads them),
// 24-bit, and 32-bit with BI_RGB or the BI_BITFIELDS masks Pillow knows
// (alpha dropped, not premultiplied), bottom-up or top-down. RLE and
// 16-bit bitmaps, and the grey-palette layouts Pillow misreads, are refused
// by name; so are truncated files and images over the pixel limit, checked
// from the header before any allocation.
//
// Written here rather than taken from stb_image, whose BMP loader fills
// the rows of a truncated file with zeros, reads palette entries past the
// stored ones from uninitialised memory and sizes the palette from the data
// offset where Pillow uses the header's colour count.
//
// One per worker thread; not thread-safe.
#ifndef STOKER_DAEMON_IMAGE_BMP_DECODER_H_
#define STOKER_DAEMON_IMAGE_BMP_DECODER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/decode_types.h"

namespace stoker {

// "BM": what Pillow's BMP plugin accepts.
bool IsBmp(std::span<const uint8_t> bytes);

class BmpDecoder {
 public:
  explicit BmpDecoder(DecodeLimits limits) : limits_(limits) {}

  // Same contract as PngDecoder::DecodeRegion: the whole image is decoded
  // into `buffer` and *out points at the region.
  absl::Status DecodeRegion(
      std::span<const uint8_t> bmp,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

  // The palette entries past a short palette: black (Pillow >= 10.1, the
  // default) or Pillow 9's grey ramp.
  void set_palette_tail_black(bool on) { palette_tail_black_ = on; }

 private:
  const DecodeLimits limits_;
  bool palette_tail_black_ = true;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_BMP_DECODER_H_
