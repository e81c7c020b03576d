#include "daemon/image/png_decoder.h"

#include <spng.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "daemon/image/whole_image.h"

namespace stoker {
namespace {

constexpr uint8_t kPngSignature[8] = {0x89, 'P',  'N',  'G',
                                      '\r', '\n', 0x1a, '\n'};

struct ContextDeleter {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         p[3];
}

// Walks the chunk headers up to the first IDAT: an acTL chunk there makes
// the file an animated PNG.
bool IsAnimated(std::span<const uint8_t> png) {
  size_t at = sizeof(kPngSignature);
  while (at + 8 <= png.size()) {
    const uint32_t length = BigEndian32(&png[at]);
    const uint8_t* type = &png[at + 4];
    if (std::memcmp(type, "acTL", 4) == 0) return true;
    if (std::memcmp(type, "IDAT", 4) == 0) return false;
    if (length > png.size()) return false;  // corrupt: libspng will say so
    at += 12 + size_t(length);
  }
  return false;
}

// The bytes of all IDAT chunks (the chunks whose headers fit the file).
uint64_t IdatBytes(std::span<const uint8_t> png) {
  uint64_t total = 0;
  size_t at = sizeof(kPngSignature);
  while (at + 8 <= png.size()) {
    const uint32_t length = BigEndian32(&png[at]);
    if (std::memcmp(&png[at + 4], "IDAT", 4) == 0) {
      total += std::min<uint64_t>(length, png.size() - at - 8);
    }
    if (std::memcmp(&png[at + 4], "IEND", 4) == 0) break;
    at += 12 + size_t(length);
    if (length > png.size()) break;
  }
  return total;
}

// Deflate turns a byte into at most about 1032: image data that needs more
// than that of what the file holds cannot be there, and its buffer is not
// worth allocating (a 60-byte PNG claiming 8192x8192).
absl::Status CheckImageData(std::span<const uint8_t> png,
                            const spng_ihdr& ihdr) {
  static constexpr int kChannels[] = {1, 0, 3, 1, 2, 0, 4};
  const int channels =
      ihdr.color_type < 7 ? std::max(kChannels[ihdr.color_type], 1) : 1;
  const uint64_t row_bits = uint64_t(ihdr.width) * channels * ihdr.bit_depth;
  const uint64_t need = uint64_t(ihdr.height) * ((row_bits + 7) / 8);
  const uint64_t have = IdatBytes(png);
  if (have * 1032 + 1024 < need) {
    return absl::InvalidArgumentError(absl::StrCat(
        "corrupt PNG: ", have, " bytes of image data cannot hold the ",
        ihdr.width, "x", ihdr.height, " image its header claims"));
  }
  return absl::OkStatus();
}

absl::Status PngError(int rc) {
  return absl::InvalidArgumentError(
      absl::StrCat("corrupt or unsupported PNG: ", spng_strerror(rc)));
}

absl::Status DecodeRgb8(spng_ctx* ctx, std::vector<uint8_t>* buffer) {
  size_t bytes = 0;
  if (const int rc = spng_decoded_image_size(ctx, SPNG_FMT_RGB8, &bytes);
      rc != 0) {
    return PngError(rc);
  }
  buffer->resize(bytes);
  if (const int rc =
          spng_decode_image(ctx, buffer->data(), bytes, SPNG_FMT_RGB8, 0);
      rc != 0) {
    return PngError(rc);
  }
  return absl::OkStatus();
}

// Pillow opens 16-bit greyscale as mode "I", and convert("RGB") clips each
// value to 255 (it does not scale): most such images come out white through
// torchvision's loader, and so they do here.
absl::Status DecodeGrey16(spng_ctx* ctx, ImageSize size,
                          std::vector<uint8_t>* buffer) {
  const size_t pixels = size.Pixels();
  buffer->resize(5 * pixels);  // RGB in front, the raw samples behind
  uint8_t* raw = buffer->data() + 3 * pixels;
  if (const int rc = spng_decode_image(ctx, raw, 2 * pixels, SPNG_FMT_RAW, 0);
      rc != 0) {
    return PngError(rc);
  }
  uint8_t* rgb = buffer->data();
  for (size_t i = 0; i < pixels; ++i) {  // raw is big-endian
    const uint8_t v = raw[2 * i] != 0 ? 255 : raw[2 * i + 1];
    rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = v;
  }
  return absl::OkStatus();
}

using Context = std::unique_ptr<spng_ctx, ContextDeleter>;

// A context on `png`, its header read and checked (not animated, within
// the limits, image data that can hold it).
absl::StatusOr<Context> Open(std::span<const uint8_t> png,
                             const DecodeLimits& limits, spng_ihdr* ihdr) {
  if (IsAnimated(png)) {
    return absl::InvalidArgumentError("animated PNG is not supported");
  }
  Context ctx(spng_ctx_new(0));
  if (ctx == nullptr) return absl::ResourceExhaustedError("spng_ctx_new");
  // Bounds for ancillary chunks (text, ICC profiles...): no memory bombs.
  spng_set_chunk_limits(ctx.get(), 1 << 20, 1 << 24);
  spng_set_png_buffer(ctx.get(), png.data(), png.size());
  if (const int rc = spng_get_ihdr(ctx.get(), ihdr); rc != 0) {
    return PngError(rc);
  }
  if (absl::Status ok =
          CheckImageSize("PNG", ihdr->width, ihdr->height, limits);
      !ok.ok()) {
    return ok;
  }
  if (absl::Status ok = CheckImageData(png, *ihdr); !ok.ok()) return ok;
  return ctx;
}

// The mode Pillow opens a PNG of this colour type and depth as.
const char* PillowMode(const spng_ihdr& ihdr) {
  switch (ihdr.color_type) {
    case SPNG_COLOR_TYPE_GRAYSCALE:
      return ihdr.bit_depth == 16 ? "I;16" : ihdr.bit_depth == 1 ? "1" : "L";
    case SPNG_COLOR_TYPE_TRUECOLOR:
      return ihdr.bit_depth == 16 ? "RGB (16-bit)" : "RGB";
    case SPNG_COLOR_TYPE_GRAYSCALE_ALPHA:
      return "LA";
    case SPNG_COLOR_TYPE_TRUECOLOR_ALPHA:
      return "RGBA";
    default:
      return "P";
  }
}

}  // namespace

bool IsPng(std::span<const uint8_t> bytes) {
  return bytes.size() >= sizeof(kPngSignature) &&
         std::memcmp(bytes.data(), kPngSignature, sizeof(kPngSignature)) == 0;
}

bool IsJpeg(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 &&
         bytes[2] == 0xff;
}

absl::Status PngDecoder::DecodeRegion(
    std::span<const uint8_t> png,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  spng_ihdr ihdr;
  absl::StatusOr<Context> ctx = Open(png, limits_, &ihdr);
  if (!ctx.ok()) return ctx.status();
  const ImageSize size{int(ihdr.width), int(ihdr.height)};
  const Region r = PlanRegion(plan, size);
  absl::Status decoded =
      ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 16
          ? DecodeGrey16(ctx->get(), size, buffer)
          : DecodeRgb8(ctx->get(), buffer);
  if (!decoded.ok()) return decoded;
  PointAtRegion(buffer->data(), size, r, out);
  return absl::OkStatus();
}

absl::Status PngDecoder::DecodeIndices(std::span<const uint8_t> png,
                                       std::vector<uint8_t>* buffer,
                                       ImageSize* size) {
  if (!IsPng(png)) {
    return absl::InvalidArgumentError(
        "a mask must be a PNG (mode P or L); this is not one");
  }
  spng_ihdr ihdr;
  absl::StatusOr<Context> ctx = Open(png, limits_, &ihdr);
  if (!ctx.ok()) return ctx.status();
  const bool palette = ihdr.color_type == SPNG_COLOR_TYPE_INDEXED;
  const bool grey8 =
      ihdr.color_type == SPNG_COLOR_TYPE_GRAYSCALE && ihdr.bit_depth == 8;
  if (!palette && !grey8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a mask must be a PNG of mode P (palette indices) or L (8-bit grey); "
        "this one opens as mode ",
        PillowMode(ihdr), " (", int(ihdr.bit_depth),
        "-bit), whose values are not class indices"));
  }
  *size = {int(ihdr.width), int(ihdr.height)};
  const size_t pixels = size->Pixels();
  const int depth = ihdr.bit_depth;
  const size_t row_bytes = (size_t(ihdr.width) * depth + 7) / 8;
  // The packed rows behind the unpacked pixels.
  buffer->resize(pixels + (depth < 8 ? row_bytes * ihdr.height : 0));
  uint8_t* raw = depth < 8 ? buffer->data() + pixels : buffer->data();
  const size_t raw_bytes = depth < 8 ? row_bytes * ihdr.height : pixels;
  if (const int rc =
          spng_decode_image(ctx->get(), raw, raw_bytes, SPNG_FMT_RAW, 0);
      rc != 0) {
    return PngError(rc);
  }
  if (depth < 8) {  // big-endian bit fields, leftmost pixel first
    const int per_byte = 8 / depth;
    const int mask = (1 << depth) - 1;
    for (size_t y = 0; y < ihdr.height; ++y) {
      const uint8_t* in = raw + y * row_bytes;
      uint8_t* out = buffer->data() + y * ihdr.width;
      for (size_t x = 0; x < ihdr.width; ++x) {
        const int shift = 8 - depth * (1 + int(x % per_byte));
        out[x] = uint8_t((in[x / per_byte] >> shift) & mask);
      }
    }
    buffer->resize(pixels);
  }
  return absl::OkStatus();
}

}  // namespace stoker
