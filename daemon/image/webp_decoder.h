// WebpDecoder: decodes WebP bytes (lossy or lossless, with or without
// alpha) to 8-bit RGB with libwebp, as PIL.Image.open(f).convert("RGB")
// gives them: alpha is dropped, colour is not premultiplied (Pillow decodes
// to straight RGBA). Animated WebP is refused (as animated PNG is), as are
// images over the pixel limit, checked from the header before decoding.
//
// One per worker thread; not thread-safe.
#ifndef STOKER_DAEMON_IMAGE_WEBP_DECODER_H_
#define STOKER_DAEMON_IMAGE_WEBP_DECODER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/decode_types.h"

namespace stoker {

// "RIFF", a size, "WEBP": what Pillow's WebP plugin accepts.
bool IsWebp(std::span<const uint8_t> bytes);

class WebpDecoder {
 public:
  explicit WebpDecoder(DecodeLimits limits) : limits_(limits) {}

  // Same contract as PngDecoder::DecodeRegion: the whole image is decoded
  // into `buffer` and *out points at the region.
  absl::Status DecodeRegion(
      std::span<const uint8_t> webp,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

 private:
  const DecodeLimits limits_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_WEBP_DECODER_H_
