// PNG decoding: every colour type PIL's convert("RGB") accepts gives the
// same 8-bit RGB, and bad or unsupported files are clear errors.
#include <spng.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/image/png_decoder.h"
#include "daemon/image/sample_decoder.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

// Encodes `samples` (host-endian for 16-bit) as a PNG of the given type.
std::vector<uint8_t> EncodePng(
    const void* samples, size_t bytes, int width, int height,
    uint8_t color_type, uint8_t bit_depth,
    const std::vector<std::array<uint8_t, 3>>& palette = {}) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr ihdr = {
      uint32_t(width), uint32_t(height), bit_depth, color_type, 0, 0, 0};
  spng_set_ihdr(ctx, &ihdr);
  if (!palette.empty()) {
    spng_plte plte = {};
    plte.n_entries = uint32_t(palette.size());
    for (size_t i = 0; i < palette.size(); ++i) {
      plte.entries[i] = {palette[i][0], palette[i][1], palette[i][2], 255};
    }
    spng_set_plte(ctx, &plte);
  }
  EXPECT_EQ(spng_encode_image(ctx, samples, bytes, SPNG_FMT_PNG,
                              SPNG_ENCODE_FINALIZE),
            0);
  size_t size = 0;
  int error = 0;
  auto* png = static_cast<uint8_t*>(spng_get_png_buffer(ctx, &size, &error));
  std::vector<uint8_t> out(png, png + size);
  std::free(png);
  spng_ctx_free(ctx);
  return out;
}

// Decodes the whole of `png` to RGB.
absl::StatusOr<std::vector<uint8_t>> Decode(const std::vector<uint8_t>& png,
                                            DecodeLimits limits = {}) {
  PngDecoder decoder(limits);
  std::vector<uint8_t> rgb;
  ImageSize size;
  absl::Status status = testing::DecodeWhole(decoder, png, &rgb, &size);
  if (!status.ok()) return status;
  return rgb;
}

constexpr int kW = 13, kH = 7;

std::vector<uint8_t> Rgb() { return testdata::RenderImage(kW, kH, 77); }

TEST(Png, Rgb8DecodesExactly) {
  const auto rgb = Rgb();
  auto out = Decode(
      EncodePng(rgb.data(), rgb.size(), kW, kH, SPNG_COLOR_TYPE_TRUECOLOR, 8));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, rgb);
}

TEST(Png, AlphaIsDropped) {
  const auto rgb = Rgb();
  std::vector<uint8_t> rgba;
  for (size_t i = 0; i < rgb.size(); i += 3) {
    rgba.insert(rgba.end(), {rgb[i], rgb[i + 1], rgb[i + 2], uint8_t(i % 251)});
  }
  auto out = Decode(EncodePng(rgba.data(), rgba.size(), kW, kH,
                              SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, 8));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, rgb);
}

TEST(Png, GrayscaleBecomesEqualChannels) {
  std::vector<uint8_t> gray(kW * kH);
  for (size_t i = 0; i < gray.size(); ++i) gray[i] = uint8_t(i * 3);
  auto out = Decode(EncodePng(gray.data(), gray.size(), kW, kH,
                              SPNG_COLOR_TYPE_GRAYSCALE, 8));
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < gray.size(); ++i) {
    ASSERT_EQ((*out)[i * 3], gray[i]);
    ASSERT_EQ((*out)[i * 3 + 1], gray[i]);
    ASSERT_EQ((*out)[i * 3 + 2], gray[i]);
  }
}

TEST(Png, SixteenBitKeepsTheHighByte) {
  const auto rgb = Rgb();
  std::vector<uint16_t> wide(rgb.size());
  for (size_t i = 0; i < rgb.size(); ++i) wide[i] = uint16_t(rgb[i] * 257 + 3);
  auto out = Decode(EncodePng(wide.data(), wide.size() * 2, kW, kH,
                              SPNG_COLOR_TYPE_TRUECOLOR, 16));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, rgb);
}

TEST(Png, PaletteIsExpanded) {
  const std::vector<std::array<uint8_t, 3>> palette = {
      {255, 0, 0}, {0, 200, 0}, {10, 20, 30}};
  std::vector<uint8_t> indices(kW * kH);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = uint8_t(i % 3);
  auto out = Decode(EncodePng(indices.data(), indices.size(), kW, kH,
                              SPNG_COLOR_TYPE_INDEXED, 8, palette));
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < indices.size(); ++i) {
    for (int c = 0; c < 3; ++c) {
      ASSERT_EQ((*out)[i * 3 + c], palette[indices[i]][c]) << i;
    }
  }
}

TEST(Png, TruncatedCorruptAndAnimatedFilesAreClearErrors) {
  const auto rgb = Rgb();
  const auto png =
      EncodePng(rgb.data(), rgb.size(), kW, kH, SPNG_COLOR_TYPE_TRUECOLOR, 8);
  std::vector<uint8_t> truncated(png.begin(), png.begin() + png.size() / 2);
  EXPECT_EQ(Decode(truncated).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> corrupt = png;
  corrupt[45] ^= 0xff;  // IDAT data (it starts at 41): the CRC fails
  EXPECT_EQ(Decode(corrupt).status().code(),
            absl::StatusCode::kInvalidArgument);
  // An acTL chunk right after IHDR (8-byte signature + 25-byte IHDR).
  std::vector<uint8_t> animated(png.begin(), png.begin() + 33);
  const uint8_t actl[] = {0, 0, 0, 8, 'a', 'c', 'T', 'L', 0, 0,
                          0, 2, 0, 0, 0,   0,   0,   0,   0, 0};
  animated.insert(animated.end(), actl, actl + sizeof(actl));
  animated.insert(animated.end(), png.begin() + 33, png.end());
  auto status = Decode(animated).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("animated"), absl::string_view::npos);
  auto big = Decode(png, {.max_pixels = kW * kH - 1}).status();
  EXPECT_NE(big.message().find("above the limit"), absl::string_view::npos);
}

TEST(Png, ThePipelineTellsPngFromJpegByContent) {
  testdata::TempDir dir("stoker-png");
  const auto rgb = Rgb();
  const std::string path = dir.path() + "/image.png";
  ASSERT_TRUE(
      testdata::WriteFile(path, EncodePng(rgb.data(), rgb.size(), kW, kH,
                                          SPNG_COLOR_TYPE_TRUECOLOR, 8))
          .ok());
  SampleDecoder decoder({});
  std::vector<uint8_t> out(kW * kH * 3);
  ASSERT_TRUE(
      decoder.DecodeTo(testing::FileBytes(path), {kW, kH}, out.data()).ok());
  EXPECT_EQ(out, rgb);
  const std::string text = dir.path() + "/text.png";
  ASSERT_TRUE(testdata::WriteFile(text, {'h', 'e', 'l', 'l', 'o'}).ok());
  EXPECT_EQ(decoder.DecodeTo(testing::FileBytes(text), {kW, kH}, out.data())
                .message(),
            "not a JPEG, PNG, WebP, TIFF, BMP or PPM/PGM file");
}

}  // namespace
}  // namespace stoker
