// TiffDecoder: decodes the first image of a TIFF file to 8-bit RGB with
// libtiff, as PIL.Image.open(f).convert("RGB") gives it (Pillow 9.4):
// 8-bit RGB (extra samples dropped; associated alpha divided out as Pillow
// does, unassociated alpha dropped without premultiplying), greyscale and
// palette images of 1, 2, 4 and 8 bits (MinIsWhite inverted; with or
// without alpha), uncompressed or CCITT, LZW, deflate or PackBits
// compressed, in strips or tiles. What Pillow reads otherwise, or does not
// read, is refused by name (see ChooseTiffFormat), as are images over the
// pixel limit, checked from the directory before any pixel is decoded.
//
// The file is read from memory (TIFFClientOpen). libtiff's messages never
// reach stderr: errors become the returned status, warnings are dropped
// (Pillow ignores them too), through handlers given to each TIFF handle
// (TIFFOpenOptions, libtiff 4.5), so threads do not share them; the
// process-wide handlers are switched off once, for messages libtiff
// emits without a handle.
//
// One per worker thread; not thread-safe.
#ifndef STOKER_DAEMON_IMAGE_TIFF_DECODER_H_
#define STOKER_DAEMON_IMAGE_TIFF_DECODER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "daemon/image/decode_types.h"

namespace stoker {

// The byte-order marks and versions Pillow's TIFF plugin accepts (classic
// and BigTIFF).
bool IsTiff(std::span<const uint8_t> bytes);

class TiffDecoder {
 public:
  explicit TiffDecoder(DecodeLimits limits);

  // Same contract as PngDecoder::DecodeRegion: the whole image is decoded
  // into `buffer` (which also holds one strip or tile of samples while
  // decoding) and *out points at the region.
  absl::Status DecodeRegion(
      std::span<const uint8_t> tiff,
      absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
      std::vector<uint8_t>* buffer, DecodedRegion* out);

 private:
  const DecodeLimits limits_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_TIFF_DECODER_H_
