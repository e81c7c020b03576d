#include "daemon/image/webp_decoder.h"

#include <webp/decode.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon/image/whole_image.h"

namespace stoker {
namespace {

const char* StatusName(VP8StatusCode code) {
  switch (code) {
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "truncated";
    default:
      return "error";
  }
}

absl::Status WebpError(VP8StatusCode code) {
  const std::string text =
      absl::StrCat("corrupt or unsupported WebP: ", StatusName(code));
  if (code == VP8_STATUS_OUT_OF_MEMORY) {
    return absl::ResourceExhaustedError(text);
  }
  return absl::InvalidArgumentError(text);
}

}  // namespace

// Whether the file holds the whole of its image chunk (VP8 or VP8L): a
// header claiming a large image with the data cut off is refused before
// the output is allocated.
bool HasImageChunk(std::span<const uint8_t> webp) {
  size_t at = 12;  // past "RIFF", the size and "WEBP"
  while (at + 8 <= webp.size()) {
    const uint8_t* p = &webp[at];
    const uint64_t length = uint64_t(p[4]) | uint64_t(p[5]) << 8 |
                            uint64_t(p[6]) << 16 | uint64_t(p[7]) << 24;
    if (std::memcmp(p, "VP8 ", 4) == 0 || std::memcmp(p, "VP8L", 4) == 0) {
      return length > 0 && at + 8 + length <= webp.size();
    }
    at += 8 + length + (length & 1);  // chunks are padded to even sizes
  }
  return false;
}

bool IsWebp(std::span<const uint8_t> bytes) {
  return bytes.size() >= 12 && std::memcmp(bytes.data(), "RIFF", 4) == 0 &&
         std::memcmp(bytes.data() + 8, "WEBP", 4) == 0;
}

absl::Status WebpDecoder::DecodeRegion(
    std::span<const uint8_t> webp,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) {
    return absl::InternalError("libwebp: version mismatch");
  }
  if (const VP8StatusCode rc =
          WebPGetFeatures(webp.data(), webp.size(), &config.input);
      rc != VP8_STATUS_OK) {
    return WebpError(rc);
  }
  if (config.input.has_animation) {
    return absl::InvalidArgumentError("animated WebP is not supported");
  }
  const int width = config.input.width, height = config.input.height;
  if (absl::Status size =
          CheckImageSize("WebP", uint64_t(width), uint64_t(height), limits_);
      !size.ok()) {
    return size;
  }
  if (!HasImageChunk(webp)) {
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt WebP: the ", width, "x", height,
                     " image's data is missing or cut short"));
  }
  const ImageSize image{width, height};
  const Region r = PlanRegion(plan, image);
  buffer->resize(image.Pixels() * 3);
  // Straight (not premultiplied) RGB, alpha dropped: Pillow decodes to
  // MODE_RGBA and convert("RGB") drops the alpha byte.
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = buffer->data();
  config.output.u.RGBA.stride = width * 3;
  config.output.u.RGBA.size = buffer->size();
  const VP8StatusCode rc = WebPDecode(webp.data(), webp.size(), &config);
  WebPFreeDecBuffer(&config.output);  // frees nothing of ours: external
  if (rc != VP8_STATUS_OK) return WebpError(rc);
  PointAtRegion(buffer->data(), image, r, out);
  return absl::OkStatus();
}

}  // namespace stoker
