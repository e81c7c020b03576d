// PngDecoder: decodes PNG bytes to 8-bit RGB with libspng, as
// PIL.Image.convert("RGB") would: palette, grayscale and 16-bit images are
// converted (16-bit RGB by its high bytes; 16-bit greyscale, which Pillow
// opens as mode "I", clipped to 255), alpha is dropped. Animated PNGs are
// refused (their first frame is not what a dataset means), as are images over
// the pixel limit, checked from the header before decoding.
//
// One per worker thread; not thread-safe.
#ifndef STOKER_DAEMON_IMAGE_PNG_DECODER_H_
#define STOKER_DAEMON_IMAGE_PNG_DECODER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/jpeg_decoder.h"

namespace stoker {

bool IsPng(std::span<const uint8_t> bytes);
bool IsJpeg(std::span<const uint8_t> bytes);

class PngDecoder {
 public:
  explicit PngDecoder(DecodeLimits limits) : limits_(limits) {}

  // Same contract as JpegDecoder::DecodeRegion, without DCT scaling: the
  // whole image is decoded into `buffer` and *out points at the region.
  absl::Status DecodeRegion(
      std::span<const uint8_t> png,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

  // A label mask: the PNG's values as Pillow opens them, one byte per
  // pixel, never converted to colours: mode P's palette indices (1, 2, 4
  // or 8 bits) or mode L's grey levels (8 bits). Other colour types and
  // depths are refused, naming the mode Pillow would give them.
  absl::Status DecodeIndices(std::span<const uint8_t> png,
                             std::vector<uint8_t>* buffer, ImageSize* size);

 private:
  const DecodeLimits limits_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PNG_DECODER_H_
