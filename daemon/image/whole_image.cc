#include "daemon/image/whole_image.h"

#include "absl/strings/str_cat.h"

namespace stoker {

absl::Status CheckImageSize(absl::string_view format, uint64_t width,
                            uint64_t height, const DecodeLimits& limits) {
  if (width == 0 || height == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        format, " image has no pixels (", width, "x", height, ")"));
  }
  constexpr uint64_t kMaxSide = uint64_t{1} << 24;
  if (width > kMaxSide || height > kMaxSide ||
      width * height > limits.max_pixels) {
    return absl::InvalidArgumentError(
        absl::StrCat("image is ", width, "x", height, " = ", width * height,
                     " pixels, above the limit of ", limits.max_pixels));
  }
  return absl::OkStatus();
}

Region PlanRegion(absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
                  ImageSize size) {
  return ClampRegion(plan(size).region, size);
}

void PointAtRegion(const uint8_t* rgb, ImageSize size, const Region& region,
                   DecodedRegion* out) {
  out->stride = size.width * 3;
  out->data = rgb + size_t(region.y) * out->stride + size_t(region.x) * 3;
  out->size = {region.width, region.height};
  out->scale_denom = 1;
}

}  // namespace stoker
