// JpegDecoder: decodes JPEG bytes (or the part of them a crop needs) to
// 8-bit RGB with libjpeg-turbo. Grayscale becomes RGB; CMYK and YCCK become
// RGB as Pillow converts them.
//
// One per worker thread (it keeps its libjpeg state between images); not
// thread-safe. Corrupt, truncated, unsupported and oversized inputs give an
// INVALID_ARGUMENT status with libjpeg's reason; warnings (e.g. "premature
// end of data") count as errors, so a damaged file never yields half-grey
// pixels silently.
//
//   JpegDecoder decoder({.max_pixels = 64 << 20});
//   DecodedRegion region;
//   auto status = decoder.DecodeRegion(bytes, [&](const ImageSize& size) {
//     return RegionRequest{{0, 0, size.width, size.height}, {224, 224}};
//   }, &buffer, &region);
#ifndef STOKER_DAEMON_IMAGE_JPEG_DECODER_H_
#define STOKER_DAEMON_IMAGE_JPEG_DECODER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/decode_types.h"

namespace stoker {

class JpegDecoder {
 public:
  explicit JpegDecoder(DecodeLimits limits);
  ~JpegDecoder();
  JpegDecoder(const JpegDecoder&) = delete;
  JpegDecoder& operator=(const JpegDecoder&) = delete;

  // Decodes only what `plan` asks for, once it has seen the image size:
  // rows above and below the region are skipped, columns outside it are
  // skipped where the JPEG's block structure allows (jpeg_crop_scanline),
  // and the region is decoded at 1/2, 1/4 or 1/8 scale (in the DCT domain,
  // almost free) when it stays at least as large as the target. `buffer`
  // holds the pixels; *out says where they are.
  absl::Status DecodeRegion(
      std::span<const uint8_t> jpeg,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

  struct State;  // libjpeg state; public only for its C callbacks

 private:
  // Why an image of this size must not be decoded, if it must not.
  absl::Status Refuse(const ImageSize& size) const;

  const DecodeLimits limits_;
  std::unique_ptr<State> state_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_JPEG_DECODER_H_
