#include "daemon/image/image_decoder.h"

namespace stoker {

absl::Status ImageDecoder::DecodeRegion(
    std::span<const uint8_t> file,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  if (IsJpeg(file)) return jpeg_.DecodeRegion(file, plan, buffer, out);
  if (IsPng(file)) return png_.DecodeRegion(file, plan, buffer, out);
  if (IsWebp(file)) return webp_.DecodeRegion(file, plan, buffer, out);
  if (IsTiff(file)) return tiff_.DecodeRegion(file, plan, buffer, out);
  if (IsBmp(file)) return bmp_.DecodeRegion(file, plan, buffer, out);
  if (IsPnm(file)) return pnm_.DecodeRegion(file, plan, buffer, out);
  return absl::InvalidArgumentError(file.empty() ? "empty file"
                                                 : kUnknownFormat);
}

}  // namespace stoker
