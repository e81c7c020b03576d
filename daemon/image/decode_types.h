// What every decoder and the ops after it share: an image's size, a region
// of it, what a decode should produce and what it produced, and the limits
// a decode keeps to.
#ifndef STOKER_DAEMON_IMAGE_DECODE_TYPES_H_
#define STOKER_DAEMON_IMAGE_DECODE_TYPES_H_

#include <cstdint>

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

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_DECODE_TYPES_H_
