// Partial JPEG decodes against the full decode: the pixels a resample reads
// (its footprint) come out of a crop of the file, decoded with the margin
// DecodeWindow adds, exactly as a full decode gives them, for every chroma
// subsampling libjpeg-turbo upsamples (fancy upsampling at the crop's
// edges), progressive files (smoothed blocks too), odd sizes and footprints
// touching each edge.
// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on
#include <turbojpeg.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/support/dataset_gen.h"
#include "daemon/image/exact_geometry.h"
#include "daemon/image/jpeg_decoder.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

struct Encoded {
  std::vector<uint8_t> jpeg;
  std::vector<uint8_t> full;  // TurboJPEG's full decode, RGB
};

enum class Kind { kBaseline, kProgressive, kUnrefined };

// A progressive file whose scans send every coefficient once, at reduced
// precision, and never refine it (legal: a decoder smooths such blocks from
// their neighbours' DC values, and so does libjpeg-turbo).
std::vector<uint8_t> EncodeUnrefined(const std::vector<uint8_t>& rgb, int w,
                                     int h, int subsampling) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  static const jpeg_scan_info kColour[] = {{3, {0, 1, 2}, 0, 0, 0, 1},
                                           {1, {0}, 1, 5, 0, 2},
                                           {1, {2}, 1, 63, 0, 1},
                                           {1, {1}, 1, 63, 0, 1},
                                           {1, {0}, 6, 63, 0, 2}};
  static const jpeg_scan_info kGray[] = {
      {1, {0}, 0, 0, 0, 1}, {1, {0}, 1, 5, 0, 2}, {1, {0}, 6, 63, 0, 2}};
  if (subsampling == TJSAMP_GRAY) {
    jpeg_set_colorspace(&c, JCS_GRAYSCALE);
    c.scan_info = kGray;
    c.num_scans = 3;
  } else {
    // Luma's sampling factors (h, v) by TurboJPEG's TJSAMP_* order.
    static const int kFactors[][2] = {{1, 1}, {2, 1}, {2, 2},
                                      {1, 1}, {1, 2}, {4, 1}};
    c.comp_info[0].h_samp_factor = kFactors[subsampling][0];
    c.comp_info[0].v_samp_factor = kFactors[subsampling][1];
    c.scan_info = kColour;
    c.num_scans = 5;
  }
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(&rgb[size_t(c.next_scanline) * w * 3]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> jpeg(mem, mem + size);
  std::free(mem);
  jpeg_destroy_compress(&c);
  return jpeg;
}

Encoded Encode(int w, int h, int subsampling, Kind kind) {
  const std::vector<uint8_t> pixels = testdata::RenderImage(w, h, w * 7 + h);
  Encoded e;
  if (kind == Kind::kUnrefined) {
    e.jpeg = EncodeUnrefined(pixels, w, h, subsampling);
  } else {
    tjhandle c = tjInitCompress();
    unsigned char* jpeg = nullptr;
    unsigned long size = 0;
    EXPECT_EQ(0,
              tjCompress2(c, pixels.data(), w, 0, h, TJPF_RGB, &jpeg, &size,
                          subsampling, 90,
                          kind == Kind::kProgressive ? TJFLAG_PROGRESSIVE : 0))
        << tjGetErrorStr2(c);
    e.jpeg.assign(jpeg, jpeg + size);
    tjFree(jpeg);
    tjDestroy(c);
  }
  tjhandle d = tjInitDecompress();
  e.full.resize(size_t(w) * h * 3);
  EXPECT_EQ(0, tjDecompress2(d, e.jpeg.data(), e.jpeg.size(), e.full.data(), w,
                             0, h, TJPF_RGB, 0));
  tjDestroy(d);
  return e;
}

// A footprint anywhere in the image: random, or flush with an edge.
Region RandomFootprint(std::mt19937* rng, ImageSize image, int i) {
  auto draw = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(*rng);
  };
  Region f;
  f.width = draw(1, image.width);
  f.height = draw(1, image.height);
  f.x = draw(0, image.width - f.width);
  f.y = draw(0, image.height - f.height);
  if (i % 5 == 1) f.x = 0;
  if (i % 5 == 2) f.x = image.width - f.width;
  if (i % 7 == 3) f.y = 0;
  if (i % 7 == 4) f.y = image.height - f.height;
  if (i % 11 == 5) f.x = draw(1, image.width / 16) * 16 % image.width;
  f.width = std::min(f.width, image.width - f.x);
  return f;
}

class PartialDecodeTest
    : public ::testing::TestWithParam<std::tuple<int, Kind>> {};

TEST_P(PartialDecodeTest, FootprintPixelsEqualTheFullDecode) {
  const auto [subsampling, kind] = GetParam();
  for (const ImageSize image :
       {ImageSize{301, 203}, ImageSize{64, 48}, ImageSize{17, 250}}) {
    const Encoded e = Encode(image.width, image.height, subsampling, kind);
    JpegDecoder decoder({});
    std::vector<uint8_t> buffer;
    std::mt19937 rng(image.width * 1000 + subsampling);
    for (int i = 0; i < 150; ++i) {
      const Region f = RandomFootprint(&rng, image, i);
      const Region d = DecodeWindow(f, image);
      DecodedRegion region;
      ASSERT_TRUE(decoder
                      .DecodeRegion(
                          e.jpeg,
                          [&](const ImageSize&) {
                            return RegionRequest{d, {d.width, d.height}};
                          },
                          &buffer, &region)
                      .ok());
      ASSERT_EQ(region.scale_denom, 1);
      ASSERT_EQ(region.size.width, d.width);
      ASSERT_EQ(region.size.height, d.height);
      for (int y = f.y; y < f.y + f.height; ++y) {
        const uint8_t* ours = region.data + size_t(y - d.y) * region.stride +
                              size_t(f.x - d.x) * 3;
        const uint8_t* full = &e.full[(size_t(y) * image.width + f.x) * 3];
        ASSERT_EQ(0, std::memcmp(ours, full, size_t(f.width) * 3))
            << image.width << "x" << image.height << ", footprint " << f.x
            << "," << f.y << " " << f.width << "x" << f.height << ", row " << y;
      }
    }
  }
}

std::string ParamName(
    const ::testing::TestParamInfo<std::tuple<int, Kind>>& info) {
  // TurboJPEG's TJSAMP_* order.
  static const char* const kNames[] = {"s444", "s422", "s420",
                                       "gray", "s440", "s411"};
  static const char* const kKinds[] = {"", "_progressive", "_unrefined"};
  return std::string(kNames[std::get<0>(info.param)]) +
         kKinds[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    Subsamplings, PartialDecodeTest,
    ::testing::Combine(::testing::Values(TJSAMP_444, TJSAMP_422, TJSAMP_420,
                                         TJSAMP_440, TJSAMP_411, TJSAMP_GRAY),
                       ::testing::Values(Kind::kBaseline, Kind::kProgressive,
                                         Kind::kUnrefined)),
    ParamName);

}  // namespace
}  // namespace stoker
