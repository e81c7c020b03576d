// What the decoders that decode a whole image share (PNG, WebP, TIFF, BMP,
// PNM): the size check made from the header, before any pixel is
// allocated, and the region of the decoded image handed on. They have no
// partial decode: the whole image is decoded and *out points at the part
// the plan asked for (exactness is what matters there; the sample decoder
// asks for the exact footprint its resample reads).
#ifndef STOKER_DAEMON_IMAGE_WHOLE_IMAGE_H_
#define STOKER_DAEMON_IMAGE_WHOLE_IMAGE_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "daemon/image/decode_types.h"

namespace stoker {

// INVALID_ARGUMENT when an image of width x height must not be decoded: no
// pixels, more than limits.max_pixels, or a side above 2^24 (no decoder
// here makes sense of more, and the arithmetic stays in range).
absl::Status CheckImageSize(absl::string_view format, uint64_t width,
                            uint64_t height, const DecodeLimits& limits);

// The region `plan` asks for in an image of `size`, clamped to it.
Region PlanRegion(absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
                  ImageSize size);

// Points *out at `region` of the packed RGB image `rgb` of `size`.
void PointAtRegion(const uint8_t* rgb, ImageSize size, const Region& region,
                   DecodedRegion* out);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_WHOLE_IMAGE_H_
