// The WebP, TIFF, BMP and PNM decoders on their own: exact pixels for a
// plain file of each, and for bad input (truncated files, garbage after the
// magic bytes, huge declared sizes, variants Pillow reads differently) an
// INVALID_ARGUMENT that says what is wrong, with nothing printed. The
// comparison with Pillow itself, variant by variant, is
// tests/python/test_formats.py.
#include <tiffio.h>
#include <webp/encode.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/image/image_decoder.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

constexpr int kW = 13, kH = 7;

std::vector<uint8_t> Rgb() { return testdata::RenderImage(kW, kH, 5); }

// Decodes the whole of `file` with the decoder its first bytes pick.
absl::StatusOr<std::vector<uint8_t>> Decode(std::span<const uint8_t> file,
                                            DecodeLimits limits = {}) {
  ImageDecoder decoder(limits);
  std::vector<uint8_t> rgb;
  ImageSize size;
  absl::Status status = testing::DecodeWhole(decoder, file, &rgb, &size);
  if (!status.ok()) return status;
  return rgb;
}

// Decodes `file`, which must fail with INVALID_ARGUMENT saying `why`,
// without a word on stderr.
void ExpectRefused(const std::vector<uint8_t>& file, const std::string& why,
                   DecodeLimits limits = {}) {
  SCOPED_TRACE(why);
  ::testing::internal::CaptureStderr();
  const absl::Status status = Decode(file, limits).status();
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find(why), absl::string_view::npos) << status;
  EXPECT_EQ(printed, "");
}

std::vector<uint8_t> Truncated(std::vector<uint8_t> file, size_t keep) {
  file.resize(std::min(keep, file.size()));
  return file;
}

void PutLe(std::vector<uint8_t>* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(uint8_t(value >> (8 * i)));
}

// ---- WebP ----

std::vector<uint8_t> LosslessWebp(const std::vector<uint8_t>& rgb) {
  uint8_t* data = nullptr;
  const size_t size = WebPEncodeLosslessRGB(rgb.data(), kW, kH, kW * 3, &data);
  std::vector<uint8_t> out(data, data + size);
  WebPFree(data);
  return out;
}

TEST(Webp, LosslessDecodesExactly) {
  const auto rgb = Rgb();
  auto out = Decode(LosslessWebp(rgb));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, rgb);
}

TEST(Webp, BadFilesAreRefusedWithTheirReason) {
  const auto webp = LosslessWebp(Rgb());
  ExpectRefused(Truncated(webp, webp.size() / 2), "WebP");
  ExpectRefused(Truncated(webp, 12), "WebP");
  std::vector<uint8_t> garbage(webp.begin(), webp.begin() + 12);
  garbage.insert(garbage.end(), 40, 0x5a);
  ExpectRefused(garbage, "corrupt or unsupported WebP");
  ExpectRefused(webp, "above the limit", {.max_pixels = kW * kH - 1});
  // A VP8L header declaring 16384 x 16384: refused before any decoding.
  std::vector<uint8_t> huge = {'R', 'I', 'F',  'F',  18,   0,    0,    0, 'W',
                               'E', 'B', 'P',  'V',  'P',  '8',  'L',  5, 0,
                               0,   0,   0x2f, 0xff, 0xff, 0xff, 0x0f, 0};
  ExpectRefused(huge, "above the limit");
  // VP8X with the animation flag: Pillow would composite frames.
  std::vector<uint8_t> animated = {
      'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8',
      'X', 10,  0,   0,   0,  2, 0, 0, 0,   12,  0,   0,   6,   0,   0};
  ExpectRefused(animated, "animated WebP");
}

// ---- TIFF, written with libtiff ----

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A one-strip TIFF of `samples` (contiguous), with these tags.
std::vector<uint8_t> WriteTiff(const std::vector<uint8_t>& samples, int spp,
                               int bits, int photometric,
                               int compression = COMPRESSION_NONE) {
  testdata::TempDir dir("stoker-tiff");
  const std::string path = dir.path() + "/x.tif";
  TIFF* tiff = TIFFOpen(path.c_str(), "w");
  TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, kW);
  TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, kH);
  TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, bits);
  TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC, photometric);
  TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tiff, TIFFTAG_COMPRESSION, compression);
  // Several strips (JPEG wants multiples of 8 rows).
  TIFFSetField(tiff, TIFFTAG_ROWSPERSTRIP,
               compression == COMPRESSION_JPEG ? 8 : 3);
  const size_t row = samples.size() / kH;
  for (int y = 0; y < kH; ++y) {
    TIFFWriteScanline(tiff, const_cast<uint8_t*>(&samples[y * row]), y, 0);
  }
  TIFFClose(tiff);
  return ReadAll(path);
}

TEST(Tiff, RgbDecodesExactly) {
  const auto rgb = Rgb();
  for (int compression : {COMPRESSION_NONE, COMPRESSION_LZW,
                          COMPRESSION_ADOBE_DEFLATE, COMPRESSION_PACKBITS}) {
    auto out = Decode(WriteTiff(rgb, 3, 8, PHOTOMETRIC_RGB, compression));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, rgb) << "compression " << compression;
  }
}

TEST(Tiff, LayoutsPillowReadsOtherwiseAreRefusedByName) {
  std::vector<uint8_t> wide(kW * kH * 3 * 2, 0x40);
  ExpectRefused(WriteTiff(wide, 3, 16, PHOTOMETRIC_RGB), "16-bit samples");
  std::vector<uint8_t> cmyk(kW * kH * 4, 0x40);
  ExpectRefused(WriteTiff(cmyk, 4, 8, PHOTOMETRIC_SEPARATED), "CMYK");
  ExpectRefused(WriteTiff(Rgb(), 3, 8, PHOTOMETRIC_RGB, COMPRESSION_JPEG),
                "compression 7");
  std::vector<uint8_t> gray_alpha(kW * kH * 2, 0x40);  // no ExtraSamples
  ExpectRefused(WriteTiff(gray_alpha, 2, 8, PHOTOMETRIC_MINISBLACK),
                "ExtraSamples");
}

// A classic little-endian TIFF: 8-bit grey, one strip, stored at offset 8
// (the StripOffsets tag says `strip_at`).
std::vector<uint8_t> HandTiff(uint32_t width, uint32_t height,
                              const std::vector<uint8_t>& pixels,
                              uint32_t strip_at = 8) {
  std::vector<uint8_t> out = {'I', 'I', 42, 0};
  PutLe(&out, 8 + pixels.size() + (pixels.size() & 1), 4);
  out.insert(out.end(), pixels.begin(), pixels.end());
  if (pixels.size() & 1) out.push_back(0);
  const uint32_t tags[][3] = {
      {256, 4, width},  {257, 4, height},
      {258, 3, 8},      {259, 3, 1},
      {262, 3, 1},      {273, 4, strip_at},
      {278, 4, height}, {279, 4, uint32_t(pixels.size())}};
  PutLe(&out, std::size(tags), 2);
  for (const auto& [tag, type, value] : tags) {
    PutLe(&out, tag, 2);
    PutLe(&out, type, 2);
    PutLe(&out, 1, 4);
    PutLe(&out, value, 4);
  }
  PutLe(&out, 0, 4);
  return out;
}

TEST(Tiff, BadFilesAreRefusedQuietly) {
  const auto tiff = WriteTiff(Rgb(), 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW);
  ExpectRefused(Truncated(tiff, tiff.size() / 2), "TIFF:");
  ExpectRefused(Truncated(tiff, 6), "unsupported TIFF");
  std::vector<uint8_t> garbage = {'I', 'I', 42, 0};
  garbage.insert(garbage.end(), 60, 0xa5);
  ExpectRefused(garbage, "corrupt or unsupported TIFF");
  ExpectRefused(tiff, "above the limit", {.max_pixels = kW * kH - 1});
  std::vector<uint8_t> pixels(kW * kH, 9);
  ASSERT_TRUE(Decode(HandTiff(kW, kH, pixels)).ok());
  ExpectRefused(HandTiff(1u << 20, 1u << 20, pixels), "above the limit");
  // The strip lies past the end of the file: refused before decoding.
  ExpectRefused(HandTiff(kW, kH, pixels, 1 << 20), "past the end of the file");
}

// A tiled grey TIFF of width x height in tiles of tile_width x tile_height
// (multiples of 16), every tile deflate-compressed zeros.
std::vector<uint8_t> TiledTiff(uint32_t width, uint32_t height,
                               uint32_t tile_width, uint32_t tile_height) {
  testdata::TempDir dir("stoker-tiff");
  const std::string path = dir.path() + "/x.tif";
  TIFF* tiff = TIFFOpen(path.c_str(), "w");
  TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, width);
  TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, height);
  TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, 8);
  TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(tiff, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
  TIFFSetField(tiff, TIFFTAG_TILEWIDTH, tile_width);
  TIFFSetField(tiff, TIFFTAG_TILELENGTH, tile_height);
  std::vector<uint8_t> zeros(size_t(tile_width) * tile_height, 0);
  for (uint32_t t = 0; t < TIFFNumberOfTiles(tiff); ++t) {
    TIFFWriteEncodedTile(tiff, t, zeros.data(), tmsize_t(zeros.size()));
  }
  TIFFClose(tiff);
  return ReadAll(path);
}

// libtiff does not clamp tiles to the image: a small image declaring huge
// tiles would make a worker inflate (and allocate) far more than the image
// holds, per tile. Such tiles are refused; tiles within the image rounded
// up to 16 pixels are read.
TEST(Tiff, TilesLargerThanTheImageNeedsAreRefused) {
  const auto fits = TiledTiff(20, 10, 32, 16);
  auto out = Decode(fits);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, std::vector<uint8_t>(20 * 10 * 3, 0));
  ExpectRefused(TiledTiff(20, 1, 16, 4096), "tiles larger than the image");
  ExpectRefused(TiledTiff(1, 1, 1024, 16), "tiles larger than the image");
}

// libtiff's handlers belong to each TIFF handle: threads decoding good and
// bad files side by side each get their own outcome.
TEST(Tiff, ThreadsKeepTheirOwnErrors) {
  const auto good = WriteTiff(Rgb(), 3, 8, PHOTOMETRIC_RGB, COMPRESSION_LZW);
  const auto bad = Truncated(good, good.size() - 20);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const bool ok = Decode((i + t) % 2 ? good : bad).ok();
        wrong[t] += ok != bool((i + t) % 2);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

// ---- BMP ----

// A BITMAPINFOHEADER bitmap: `rows` stored as given, padded to 4 bytes.
std::vector<uint8_t> Bmp(int32_t width, int32_t height, int bits,
                         const std::vector<std::vector<uint8_t>>& rows,
                         const std::vector<uint8_t>& palette = {},
                         uint32_t compression = 0) {
  std::vector<uint8_t> data;
  for (const auto& row : rows) {
    data.insert(data.end(), row.begin(), row.end());
    data.resize((data.size() + 3) / 4 * 4);
  }
  std::vector<uint8_t> out = {'B', 'M'};
  const size_t offset = 54 + palette.size();
  PutLe(&out, offset + data.size(), 4);
  PutLe(&out, 0, 4);
  PutLe(&out, offset, 4);
  for (uint64_t v : {40u, uint32_t(width), uint32_t(height)}) PutLe(&out, v, 4);
  PutLe(&out, 1, 2);
  PutLe(&out, bits, 2);
  for (uint64_t v : {compression, uint32_t(data.size()), 0u, 0u, 0u, 0u}) {
    PutLe(&out, v, 4);
  }
  out.insert(out.end(), palette.begin(), palette.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<std::vector<uint8_t>> BgrRowsBottomUp(
    const std::vector<uint8_t>& rgb) {
  std::vector<std::vector<uint8_t>> rows;
  for (int y = kH - 1; y >= 0; --y) {
    std::vector<uint8_t> row;
    for (int x = 0; x < kW; ++x) {
      const uint8_t* p = &rgb[(y * kW + x) * 3];
      row.insert(row.end(), {p[2], p[1], p[0]});
    }
    rows.push_back(row);
  }
  return rows;
}

TEST(Bmp, TwentyFourBitDecodesExactly) {
  const auto rgb = Rgb();
  auto out = Decode(Bmp(kW, kH, 24, BgrRowsBottomUp(rgb)));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, rgb);
}

TEST(Bmp, BadAndUnsupportedFilesAreRefusedByName) {
  const auto bmp = Bmp(kW, kH, 24, BgrRowsBottomUp(Rgb()));
  // Every row but the last one's padding is needed.
  ASSERT_TRUE(Decode(Truncated(bmp, bmp.size() - 1)).ok());
  ExpectRefused(Truncated(bmp, bmp.size() - 3), "truncated pixel data");
  ExpectRefused(Truncated(bmp, 30), "truncated header");
  std::vector<uint8_t> garbage = {'B', 'M'};
  garbage.insert(garbage.end(), 60, 0x77);
  ExpectRefused(garbage, "header size");
  ExpectRefused(Bmp(1 << 20, 1 << 20, 24, {}), "above the limit");
  ExpectRefused(Bmp(kW, kH, 16, {}), "16-bit");
  ExpectRefused(Bmp(kW, kH, 8, {}, std::vector<uint8_t>(1024), 1), "RLE");
  ExpectRefused(Bmp(kW, kH, 7, {}), "pixel depth 7");
  // Sixteen grey entries equal to their index: Pillow reads 4-bit pixels
  // as 8-bit ones then.
  std::vector<uint8_t> grey;
  for (int i = 0; i < 16; ++i)
    grey.insert(grey.end(), {uint8_t(i), uint8_t(i), uint8_t(i), 0});
  ExpectRefused(
      Bmp(kW, kH, 4,
          std::vector<std::vector<uint8_t>>(kH, std::vector<uint8_t>(7)), grey),
      "Pillow misreads");
}

// Indices past a short palette: black as Pillow >= 10.1 leaves them (the
// default), Pillow 9's grey ramp on request (JobSpec.reference).
TEST(Bmp, IndicesPastAShortPaletteFollowTheReferencePillow) {
  const std::vector<uint8_t> palette = {30, 20, 10, 0, 60, 50, 40, 0};  // BGRX
  std::vector<uint8_t> bmp = Bmp(2, 1, 8, {{1, 7}}, palette);
  bmp[46] = 2;  // biClrUsed: two colours
  ImageDecoder decoder({});
  std::vector<uint8_t> rgb;
  ImageSize size;
  ASSERT_TRUE(testing::DecodeWhole(decoder, bmp, &rgb, &size).ok());
  EXPECT_EQ(rgb, (std::vector<uint8_t>{40, 50, 60, 0, 0, 0}));
  decoder.set_palette_tail_black(false);
  ASSERT_TRUE(testing::DecodeWhole(decoder, bmp, &rgb, &size).ok());
  EXPECT_EQ(rgb, (std::vector<uint8_t>{40, 50, 60, 7, 7, 7}));
}

// ---- Headers that claim more than the file holds ----

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t crc = 0xffffffff;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
  }
  return ~crc;
}

void PngChunk(std::vector<uint8_t>* out, const char* type,
              const std::vector<uint8_t>& data) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(uint8_t(data.size() >> shift));
  }
  const size_t start = out->size();
  out->insert(out->end(), type, type + 4);
  out->insert(out->end(), data.begin(), data.end());
  const uint32_t crc = Crc32(&(*out)[start], out->size() - start);
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(uint8_t(crc >> shift));
}

// Small files whose headers claim an 8192x8192 RGB image (192 MiB decoded).
std::vector<std::pair<std::string, std::vector<uint8_t>>> Bombs() {
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  PngChunk(&png, "IHDR", {0, 0, 0x20, 0, 0, 0, 0x20, 0, 8, 2, 0, 0, 0});
  PngChunk(&png, "IDAT", {0x78, 0x9c, 0x63, 0, 0, 0, 1, 0, 1});
  PngChunk(&png, "IEND", {});
  // A lossless WebP header whose VP8L chunk says 1000 bytes and holds 5.
  std::vector<uint8_t> webp = {'R', 'I', 'F', 'F'};
  PutLe(&webp, 4 + 8 + 1000, 4);
  webp.insert(webp.end(), {'W', 'E', 'B', 'P', 'V', 'P', '8', 'L'});
  PutLe(&webp, 1000, 4);
  webp.push_back(0x2f);
  PutLe(&webp, 8191 | 8191u << 14, 4);
  // An uncompressed TIFF whose strip holds 16 bytes of 64 MiB.
  std::vector<uint8_t> tiff = HandTiff(8192, 8192, std::vector<uint8_t>(16, 7));
  const std::string ppm = "P6\n8192 8192\n255\nxyz";
  return {{"PNG", png},
          {"WebP", webp},
          {"TIFF", tiff},
          {"BMP", Bmp(8192, 8192, 24, {{1, 2, 3}})},
          {"PNM", std::vector<uint8_t>(ppm.begin(), ppm.end())}};
}

TEST(Bombs, AHeadersClaimCostsNothing) {
  for (const auto& [format, file] : Bombs()) {
    SCOPED_TRACE(format);
    ImageDecoder decoder({});
    std::vector<uint8_t> buffer;
    DecodedRegion region;
    const absl::Status status = decoder.DecodeRegion(
        file,
        [](const ImageSize& s) {
          EXPECT_EQ(s.width, 8192);
          return RegionRequest{{0, 0, s.width, s.height}, s};
        },
        &buffer, &region);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    // Refused before the output was allocated (it used to be 192 MiB of
    // zeros for a 30-byte file).
    EXPECT_LT(buffer.capacity(), size_t{1} << 20) << status;
    EXPECT_EQ(file.size() < 200, true);
  }
}

// ---- PNM ----

std::vector<uint8_t> Bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

TEST(Pnm, PpmDecodesExactly) {
  const auto rgb = Rgb();
  auto ppm = Bytes("P6\n13 7\n255\n");
  ppm.insert(ppm.end(), rgb.begin(), rgb.end());
  auto out = Decode(ppm);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, rgb);
  ExpectRefused(Truncated(ppm, ppm.size() - 1), "truncated pixel data");
}

TEST(Pnm, BadAndUnsupportedFilesAreRefusedByName) {
  ExpectRefused(Bytes("P3\n1 1\n255\n0 0 0\n"), "plain (ASCII)");
  ExpectRefused(Bytes("P6\n1 1\n1000\n......"), "maxval 1000");
  ExpectRefused(Bytes("P5\n1 1\n0\n."), "maxval out of range");
  ExpectRefused(Bytes("P5 +1 1 255\n."), "not digits");
  ExpectRefused(Bytes("P6\n99999999 99999999\n255\n"), "above the limit");
  ExpectRefused(Bytes("P6\n12345678901 1\n255\n"), "too long");
  ExpectRefused(Bytes("P5\n4 4"), "the header ends early");
  ExpectRefused(Bytes("P6#\n1 1\n255\n..."), "format 'P6#'");
  ExpectRefused(Bytes("P0CMYK\n1 1 255\n...."), "format 'P0CMYK'");
}

TEST(ImageDecoder, OtherFilesAreNamedForTheFormatsRead) {
  ExpectRefused({}, "empty file");
  ExpectRefused(Bytes("GIF89a......"), kUnknownFormat);
}

}  // namespace
}  // namespace stoker
