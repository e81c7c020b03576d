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

namespace stoker {

struct ImageSize {
  int width = 0;
  int height = 0;
  uint64_t Pixels() const { return uint64_t(width) * uint64_t(height); }
};

// A rectangle of an image, in its pixels.
struct Region {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
  bool operator==(const Region&) const = default;
};

// What DecodeRegion() should decode: `region` of the image, which will be
// resampled to `target` afterwards (so it may be decoded smaller, by DCT
// scaling, as long as it stays at least `target` large).
struct RegionRequest {
  Region region;
  ImageSize target;
};

// The decoded region: RGB rows `stride` bytes apart, `size` pixels, that
// cover the requested region scaled by 1 / scale_denom.
struct DecodedRegion {
  const uint8_t* data = nullptr;
  int stride = 0;
  ImageSize size;
  int scale_denom = 1;
};

// `region` moved and shrunk to lie inside an image of `size` (at least one
// pixel).
Region ClampRegion(Region region, ImageSize size);

struct DecodeLimits {
  // Images with more pixels are refused from their header, before any
  // decoding: a guard against decompression bombs.
  uint64_t max_pixels = uint64_t{1} << 26;
  // A worker keeps the buffers of its largest image for the next one, up to
  // this many bytes in all; above it they are freed once the sample is done.
  uint64_t max_scratch_bytes = uint64_t{64} << 20;
};

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
