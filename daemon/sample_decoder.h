// SampleDecoder: the per-sample work of a worker thread. Reads one file,
// decodes it and resizes it to the job's output size, writing the pixels
// straight into their row of a ring slot.
//
// One per worker thread; owns reusable buffers, so the hot path allocates
// only when an image is larger than any before it. Not thread-safe.
#ifndef STOKER_DAEMON_SAMPLE_DECODER_H_
#define STOKER_DAEMON_SAMPLE_DECODER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "daemon/jpeg_decoder.h"

namespace stoker {

// Largest file a worker reads; larger ones are refused as corrupt input.
inline constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;

// Reads the whole of `path` into *buffer (resized to the file's size).
absl::Status ReadFile(const std::string& path, std::vector<uint8_t>* buffer);

// Scales a packed RGB image to another packed RGB size: an area average
// (box filter) when shrinking, bilinear when enlarging. Works on planes
// (libyuv's interleaved scalers have no true box filter for non-integer
// ratios and alias); `planes` is scratch space, reused between calls.
void ResizeRgb(const uint8_t* src, ImageSize src_size, uint8_t* dst,
               ImageSize dst_size, std::vector<uint8_t>* planes);

class SampleDecoder {
 public:
  explicit SampleDecoder(DecodeLimits limits) : jpeg_(limits) {}

  // Writes `path`'s image as out_size.height x out_size.width x 3 uint8 to
  // `out`. Errors say what was wrong with the file (not which file).
  absl::Status DecodeTo(const std::string& path, ImageSize out_size,
                        uint8_t* out);

 private:
  JpegDecoder jpeg_;
  std::vector<uint8_t> file_;
  std::vector<uint8_t> decoded_;
  std::vector<uint8_t> scaled_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_SAMPLE_DECODER_H_
