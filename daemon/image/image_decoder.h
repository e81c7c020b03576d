// ImageDecoder: one decoder for every format stoker reads, picked by the
// file's first bytes (its content, never its name, as PIL.Image.open
// picks): JPEG (libjpeg-turbo), PNG (libspng), WebP (libwebp), TIFF
// (libtiff), BMP and PPM/PGM/PBM. Each gives the RGB that
// PIL.Image.open(f).convert("RGB") gives (Pillow 9.4), or refuses the file
// with INVALID_ARGUMENT naming what it does not support; none of them
// prints anything.
//
// One per worker thread (the decoders keep state and limits); not
// thread-safe.
//
//   ImageDecoder decoder({.max_pixels = 64 << 20});
//   DecodedRegion region;
//   auto status = decoder.DecodeRegion(bytes, plan, &buffer, &region);
#ifndef STOKER_DAEMON_IMAGE_IMAGE_DECODER_H_
#define STOKER_DAEMON_IMAGE_IMAGE_DECODER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/bmp_decoder.h"
#include "daemon/image/jpeg_decoder.h"
#include "daemon/image/png_decoder.h"
#include "daemon/image/pnm_decoder.h"
#include "daemon/image/tiff_decoder.h"
#include "daemon/image/webp_decoder.h"

namespace stoker {

// What a file that is none of these is told.
inline constexpr char kUnknownFormat[] =
    "not a JPEG, PNG, WebP, TIFF, BMP or PPM/PGM file";

class ImageDecoder {
 public:
  explicit ImageDecoder(DecodeLimits limits)
      : jpeg_(limits),
        png_(limits),
        webp_(limits),
        tiff_(limits),
        bmp_(limits),
        pnm_(limits) {}

  // JpegDecoder::DecodeRegion's contract, for any format: JPEG decodes
  // only the region (and may scale it down); the others decode the whole
  // image and point at the region.
  absl::Status DecodeRegion(
      std::span<const uint8_t> file,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

  // A label mask's values (PngDecoder::DecodeIndices): a PNG of mode P or
  // L, one byte per pixel in `buffer`.
  absl::Status DecodeMask(std::span<const uint8_t> file,
                          std::vector<uint8_t>* buffer, ImageSize* size) {
    return png_.DecodeIndices(file, buffer, size);
  }

  // The reference Pillow's palette behaviour (BmpDecoder).
  void set_palette_tail_black(bool on) { bmp_.set_palette_tail_black(on); }

 private:
  JpegDecoder jpeg_;
  PngDecoder png_;
  WebpDecoder webp_;
  TiffDecoder tiff_;
  BmpDecoder bmp_;
  PnmDecoder pnm_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_IMAGE_DECODER_H_
