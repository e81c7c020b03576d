// The decode path: libjpeg-turbo decode, resampling, file reading, and what
// happens with bad input.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "daemon/datasets/sample_file.h"
#include "daemon/image/exact_geometry.h"
#include "daemon/image/jpeg_decoder.h"
#include "daemon/image/pillow_resample.h"
#include "daemon/image/sample_decoder.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testdata::TempDir;
using testing::ReferenceDecode;

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

absl::Status DecodeWhole(const std::vector<uint8_t>& jpeg,
                         std::vector<uint8_t>* out, ImageSize* size,
                         DecodeLimits limits = {}) {
  JpegDecoder decoder(limits);
  return testing::DecodeWhole(decoder, jpeg, out, size);
}

class DecoderTest : public ::testing::Test {
 protected:
  std::string WriteJpeg(const std::string& name, int w, int h,
                        bool grayscale = false, bool smooth = false) {
    std::vector<uint8_t> pixels =
        testdata::RenderImage(w, h, w * 31 + h, smooth);
    if (grayscale) {
      std::vector<uint8_t> gray(size_t(w) * h);
      for (size_t i = 0; i < gray.size(); ++i) gray[i] = pixels[i * 3 + 1];
      pixels = gray;
    }
    auto jpeg = testdata::EncodeJpeg(pixels, w, h, 90, grayscale);
    EXPECT_TRUE(jpeg.ok());
    const std::string path = dir_.path() + "/" + name;
    EXPECT_TRUE(testdata::WriteFile(path, *jpeg).ok());
    return path;
  }

  absl::Status DecodeFile(const std::string& path, std::vector<uint8_t>* out,
                          ImageSize* size, DecodeLimits limits = {}) {
    return DecodeWhole(Bytes(testdata::ReadTextFile(path)), out, size, limits);
  }

  TempDir dir_{"stoker-decoder"};
};

TEST_F(DecoderTest, BuffersAboveTheScratchBoundAreFreedAfterTheSample) {
  // A 1600x1200 JPEG of about 1.1 MB: decoded at 1/8 scale its region alone
  // passes 64 KiB; and its file, held by the caller, passes 512 KiB.
  const std::vector<uint8_t> big =
      testing::FileBytes(WriteJpeg("big.jpg", 1600, 1200));
  const std::vector<uint8_t> small =
      testing::FileBytes(WriteJpeg("small.jpg", 64, 48));
  std::vector<uint8_t> out(32 * 32 * 3);
  SampleDecoder bounded(DecodeLimits{.max_scratch_bytes = 64 << 10});
  ASSERT_TRUE(bounded.DecodeTo(big, {32, 32}, out.data()).ok());
  EXPECT_EQ(bounded.scratch_bytes(), 0u);
  // Under the bound, buffers stay for the next image (no allocation).
  ASSERT_TRUE(bounded.DecodeTo(small, {32, 32}, out.data()).ok());
  const size_t kept = bounded.scratch_bytes();
  EXPECT_GT(kept, 0u);
  EXPECT_LE(kept, size_t{64} << 10);
  // The caller's file buffer counts with them: over the bound together,
  // everything is freed, and the caller is told to free its own.
  EXPECT_FALSE(bounded.TrimScratch(0));
  EXPECT_TRUE(bounded.TrimScratch(big.size()));
  EXPECT_EQ(bounded.scratch_bytes(), 0u);
  // The default bound (64 MiB) keeps the big image's buffers.
  SampleDecoder roomy(DecodeLimits{});
  ASSERT_TRUE(roomy.DecodeTo(big, {32, 32}, out.data()).ok());
  EXPECT_GT(roomy.scratch_bytes(), size_t{64} << 10);
  EXPECT_FALSE(roomy.TrimScratch(big.size()));
}

TEST_F(DecoderTest, RgbMatchesTheTurboJpegReferenceExactly) {
  const std::string path = WriteJpeg("a.jpg", 123, 77);
  std::vector<uint8_t> pixels;
  ImageSize size;
  ASSERT_TRUE(DecodeFile(path, &pixels, &size).ok());
  const testing::RgbImage reference = ReferenceDecode(path);
  EXPECT_EQ(size.width, 123);
  EXPECT_EQ(size.height, 77);
  EXPECT_EQ(pixels, reference.pixels);
}

TEST_F(DecoderTest, GrayscaleBecomesRgbWithEqualChannels) {
  const std::string path = WriteJpeg("g.jpg", 32, 16, /*grayscale=*/true);
  std::vector<uint8_t> pixels;
  ImageSize size;
  ASSERT_TRUE(DecodeFile(path, &pixels, &size).ok());
  ASSERT_EQ(pixels.size(), 32u * 16 * 3);
  for (size_t i = 0; i < pixels.size(); i += 3) {
    ASSERT_EQ(pixels[i], pixels[i + 1]);
    ASSERT_EQ(pixels[i], pixels[i + 2]);
  }
}

TEST_F(DecoderTest, TruncatedFileIsAnErrorNotGreyPixels) {
  const std::string path = WriteJpeg("t.jpg", 64, 64);
  std::string bytes = testdata::ReadTextFile(path);
  bytes.resize(bytes.size() / 2);
  std::vector<uint8_t> out;
  ImageSize size;
  const absl::Status status = DecodeWhole(Bytes(bytes), &out, &size);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("JPEG"), absl::string_view::npos) << status;
}

TEST_F(DecoderTest, GarbageEmptyAndForeignBytesAreClearErrors) {
  std::vector<uint8_t> out;
  ImageSize size;
  auto decode = [&](const std::string& bytes) {
    return DecodeWhole(Bytes(bytes), &out, &size);
  };
  EXPECT_EQ(decode("").message(), "empty file");
  EXPECT_FALSE(decode("this is not a jpeg at all").ok());
  EXPECT_FALSE(decode(std::string("\x89PNG\r\n\x1a\n", 8) + "rest").ok());
  // The decoder recovers: a good file right after the bad ones decodes.
  const std::string good = testdata::ReadTextFile(WriteJpeg("ok.jpg", 8, 8));
  EXPECT_TRUE(decode(good).ok());
}

TEST_F(DecoderTest, PixelLimitRefusesFromTheHeader) {
  const std::string path = WriteJpeg("big.jpg", 200, 100);
  std::vector<uint8_t> pixels;
  ImageSize size;
  const absl::Status status =
      DecodeFile(path, &pixels, &size, {.max_pixels = 19999});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("above the limit of 19999"),
            absl::string_view::npos)
      << status;
  EXPECT_TRUE(pixels.empty()) << "decoded before checking the limit";
}

TEST_F(DecoderTest, ReadFileReportsMissingAndNonRegularFiles) {
  std::vector<uint8_t> buffer;
  EXPECT_EQ(ReadFile(dir_.path() + "/nope.jpg", &buffer).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadFile(dir_.path(), &buffer).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(DecoderTest, SameSizeOutputIsTheExactDecode) {
  const std::string path = WriteJpeg("same.jpg", 48, 40);
  SampleDecoder decoder({});
  std::vector<uint8_t> out(48 * 40 * 3);
  ASSERT_TRUE(
      decoder.DecodeTo(testing::FileBytes(path), {48, 40}, out.data()).ok());
  EXPECT_EQ(out, ReferenceDecode(path).pixels);
}

TEST_F(DecoderTest, ResizedOutputIsCloseToAnAreaAverageReference) {
  const std::string path =
      WriteJpeg("big.jpg", 500, 375, /*grayscale=*/false, /*smooth=*/true);
  SampleDecoder decoder({});
  std::vector<uint8_t> out(224 * 168 * 3);
  ASSERT_TRUE(
      decoder.DecodeTo(testing::FileBytes(path), {224, 168}, out.data()).ok());
  const testing::RgbImage expected =
      testing::ReferenceResize(ReferenceDecode(path), 224, 168);
  const double mae =
      testing::MeanAbsDiff(out.data(), expected.pixels.data(), out.size());
  // Box filters agree to within rounding and edge weighting; a wrong
  // channel order, stride or scale would give tens of levels.
  EXPECT_LT(mae, 2.0);
}

// The exact path end to end: what a worker makes of a sample equals the
// Pillow-exact resampler run on the full decode (the resampler itself is
// held to Pillow's bytes by Python.resample). RandomResizedCrop crops, then
// resizes, so the filter clamps at the crop's edges; Resize + CenterCrop
// is a window of the whole image's resize. Partial decodes with their
// margin must not change a pixel.
TEST_F(DecoderTest, ExactPathEqualsThePillowResampleOfTheFullDecode) {
  const std::string path = WriteJpeg("photo.jpg", 500, 375);
  const testing::RgbImage full = ReferenceDecode(path);
  const ImageSize size{full.width, full.height};
  Pipeline rrc;
  rrc.geometry = Pipeline::Geometry::kRandomResizedCrop;
  rrc.output = {224, 224};
  Pipeline eval;
  eval.shorter_side = 256;
  eval.center_crop = true;
  eval.output = {224, 224};
  SampleDecoder decoder({});
  ResampleScratch scratch;
  std::vector<uint8_t> ours(224 * 224 * 3), theirs(224 * 224 * 3);
  for (const Pipeline* p : {&rrc, &eval}) {
    for (uint64_t key = 0; key < 12; ++key) {
      ASSERT_TRUE(
          decoder.ProcessBytes(testing::FileBytes(path), *p, key, ours.data())
              .ok());
      const SampleParams params = DrawSampleParams(*p, size, key);
      const std::optional<ExactGeometry> g =
          PlanExactGeometry(*p, size, params, &scratch);
      ASSERT_TRUE(g.has_value());
      ResampleSource source;
      source.pixels =
          full.pixels.data() +
          3 * (size_t(g->image.y) * full.width + size_t(g->image.x));
      source.stride = 3 * full.width;
      source.size = {g->image.width, g->image.height};
      PillowResample(source, g->box, g->resized, g->window, g->filter,
                     theirs.data(), 3 * 224, &scratch);
      ASSERT_EQ(ours, theirs)
          << (p == &rrc ? "RandomResizedCrop" : "Resize + CenterCrop")
          << ", key " << key << ", box " << params.box.x << "," << params.box.y
          << " " << params.box.width << "x" << params.box.height;
    }
  }
}

// The common training sample (RandomResizedCrop + flip, no other image op)
// is written straight from the resample's packed RGB: flipped while
// written, in every dtype and layout, it equals the unflipped sample
// mirrored and converted by hand, and what the planes' path gives (taken
// by adding an op that changes nothing: solarize above 255). An odd width,
// and RandomErasing after it.
TEST_F(DecoderTest, FlippedSamplesInEveryDtypeAndLayoutAreTheMirroredPixels) {
  const std::string path = WriteJpeg("flip.jpg", 500, 375);
  const std::vector<uint8_t> file = testing::FileBytes(path);
  Pipeline plain;
  plain.geometry = Pipeline::Geometry::kRandomResizedCrop;
  plain.output = {223, 160};
  const int w = 223, h = 160;
  const size_t n = size_t(w) * h;
  SampleDecoder decoder({});
  std::vector<uint8_t> unflipped(3 * n);
  for (uint64_t key = 0; key < 6; ++key) {
    ASSERT_TRUE(decoder.ProcessBytes(file, plain, key, unflipped.data()).ok());
    for (DType dtype : {DType::kUInt8, DType::kFloat32, DType::kFloat16}) {
      for (Layout layout : {Layout::kNHWC, Layout::kNCHW}) {
        Pipeline p = plain;
        p.flip_p = 1.0;
        p.dtype = dtype;
        p.layout = layout;
        p.normalize = dtype != DType::kUInt8;
        p.mean = {0.485f, 0.456f, 0.406f};
        p.std = {0.229f, 0.224f, 0.225f};
        std::vector<uint8_t> ours(p.BytesPerImage());
        ASSERT_TRUE(decoder.ProcessBytes(file, p, key, ours.data()).ok());
        for (int y = 0; y < h; ++y) {
          for (int x = 0; x < w; ++x) {
            for (int c = 0; c < 3; ++c) {
              const uint8_t v =
                  unflipped[(size_t(y) * w + (w - 1 - x)) * 3 + c];
              const size_t i = size_t(y) * w + x;
              const size_t at = layout == Layout::kNCHW ? c * n + i : i * 3 + c;
              const float f = (v / 255.0f - p.mean[c]) / p.std[c];
              if (dtype == DType::kUInt8) {
                ASSERT_EQ(ours[at], v) << key << " " << x << "," << y;
              } else if (dtype == DType::kFloat32) {
                float got;
                std::memcpy(&got, &ours[at * 4], 4);
                ASSERT_EQ(got, f) << key << " " << x << "," << y;
              } else {
                uint16_t got;
                std::memcpy(&got, &ours[at * 2], 2);
                ASSERT_EQ(got, FloatToHalf(f)) << key << " " << x << "," << y;
              }
            }
          }
        }
        // The same job, with and without an op that forces planes, with
        // RandomErasing on the output.
        p.erasing.enabled = true;
        p.erasing.p = 1.0;
        Pipeline planes = p;
        planes.solarize = {.p = 1.0, .threshold = 256};
        std::vector<uint8_t> packed_out(p.BytesPerImage());
        std::vector<uint8_t> planes_out(p.BytesPerImage());
        ASSERT_TRUE(decoder.ProcessBytes(file, p, key, packed_out.data()).ok());
        ASSERT_TRUE(
            decoder.ProcessBytes(file, planes, key, planes_out.data()).ok());
        ASSERT_EQ(packed_out, planes_out) << key;
      }
    }
  }
}

TEST_F(DecoderTest, EnlargingIsCloseToTheSource) {
  const std::string path = WriteJpeg("small.jpg", 50, 40);
  SampleDecoder decoder({});
  std::vector<uint8_t> out(100 * 80 * 3);
  ASSERT_TRUE(
      decoder.DecodeTo(testing::FileBytes(path), {100, 80}, out.data()).ok());
  // Shrinking the enlargement back must give the source again, roughly.
  testing::RgbImage enlarged{100, 80, out};
  const testing::RgbImage back = testing::ReferenceResize(enlarged, 50, 40);
  const testing::RgbImage source = ReferenceDecode(path);
  EXPECT_LT(testing::MeanAbsDiff(back.pixels.data(), source.pixels.data(),
                                 back.pixels.size()),
            8.0);
}

TEST_F(DecoderTest, RegionDecodeIsTheSameRegionOfTheFullDecode) {
  const std::string path = WriteJpeg("roi.jpg", 301, 203);
  const testing::RgbImage full = ReferenceDecode(path);
  JpegDecoder decoder({});
  std::vector<uint8_t> buffer;
  DecodedRegion region;
  const Region wanted{37, 51, 150, 90};
  ASSERT_TRUE(decoder
                  .DecodeRegion(
                      Bytes(testdata::ReadTextFile(path)),
                      [&](const ImageSize&) {
                        // A target as large as the region: no DCT scaling.
                        return RegionRequest{wanted, {150, 90}};
                      },
                      &buffer, &region)
                  .ok());
  EXPECT_EQ(region.scale_denom, 1);
  ASSERT_EQ(region.size.width, 150);
  ASSERT_EQ(region.size.height, 90);
  for (int y = 0; y < 90; ++y) {
    ASSERT_EQ(0, std::memcmp(region.data + y * region.stride,
                             &full.pixels[((y + 51) * 301 + 37) * 3], 150 * 3))
        << "row " << y;
  }
}

TEST_F(DecoderTest, ProgressiveJpegDecodesExactlyAlsoByRegion) {
  const std::vector<uint8_t> pixels = testdata::RenderImage(120, 90, 3);
  auto jpeg = testdata::EncodeJpeg(pixels, 120, 90, 90, /*grayscale=*/false,
                                   /*progressive=*/true);
  ASSERT_TRUE(jpeg.ok());
  const std::string path = dir_.path() + "/progressive.jpg";
  ASSERT_TRUE(testdata::WriteFile(path, *jpeg).ok());
  const testing::RgbImage full = ReferenceDecode(path);
  SampleDecoder decoder({});
  std::vector<uint8_t> out(120 * 90 * 3);
  ASSERT_TRUE(
      decoder.DecodeTo(testing::FileBytes(path), {120, 90}, out.data()).ok());
  EXPECT_EQ(out, full.pixels);
  JpegDecoder jpeg_decoder({});
  std::vector<uint8_t> buffer;
  DecodedRegion region;
  ASSERT_TRUE(jpeg_decoder
                  .DecodeRegion(
                      *jpeg,
                      [](const ImageSize&) {
                        return RegionRequest{{17, 20, 60, 40}, {60, 40}};
                      },
                      &buffer, &region)
                  .ok());
  for (int y = 0; y < 40; ++y) {
    ASSERT_EQ(0, std::memcmp(region.data + y * region.stride,
                             &full.pixels[((y + 20) * 120 + 17) * 3], 60 * 3));
  }
}

TEST_F(DecoderTest, TwelveBitJpegIsRefusedAsUnsupported) {
  const std::vector<uint8_t> pixels = testdata::RenderImage(16, 16, 5);
  auto jpeg = testdata::EncodeJpeg(pixels, 16, 16, 90);
  ASSERT_TRUE(jpeg.ok());
  // The SOF0 segment's precision byte: 8 becomes 12.
  for (size_t i = 0; i + 4 < jpeg->size(); ++i) {
    if ((*jpeg)[i] == 0xff && (*jpeg)[i + 1] == 0xc0) {
      ASSERT_EQ((*jpeg)[i + 4], 8);
      (*jpeg)[i + 4] = 12;
      break;
    }
  }
  SampleDecoder decoder({});
  std::vector<uint8_t> out(16 * 16 * 3);
  Pipeline pipeline;
  pipeline.output = pipeline.resized = {16, 16};
  const absl::Status status =
      decoder.ProcessBytes(*jpeg, pipeline, 0, out.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("precision 12"), absl::string_view::npos)
      << status;
}

TEST_F(DecoderTest, RegionDecodeScalesInTheDctDomainOnlyByPowersOfTwo) {
  const std::string path =
      WriteJpeg("dct.jpg", 640, 480, /*grayscale=*/false, /*smooth=*/true);
  JpegDecoder decoder({});
  std::vector<uint8_t> buffer;
  auto scale_for = [&](ImageSize target) {
    DecodedRegion region;
    EXPECT_TRUE(
        decoder
            .DecodeRegion(
                Bytes(testdata::ReadTextFile(path)),
                [&](const ImageSize& s) {
                  return RegionRequest{{0, 0, s.width, s.height}, target};
                },
                &buffer, &region)
            .ok());
    EXPECT_GE(region.size.width, target.width);
    EXPECT_GE(region.size.height, target.height);
    return region.scale_denom;
  };
  EXPECT_EQ(scale_for({80, 60}), 8);
  EXPECT_EQ(scale_for({100, 60}), 4);   // 640 / 8 = 80 < 100
  EXPECT_EQ(scale_for({224, 224}), 2);  // 480 / 2 = 240 >= 224
  EXPECT_EQ(scale_for({300, 300}), 1);  // 3/8 and the like are not used
}

TEST_F(DecoderTest, DctScaledResultStaysCloseToAFullDecodeResize) {
  const std::string path =
      WriteJpeg("close.jpg", 640, 480, /*grayscale=*/false, /*smooth=*/true);
  SampleDecoder decoder({});
  std::vector<uint8_t> out(80 * 60 * 3);
  ASSERT_TRUE(decoder.DecodeTo(testing::FileBytes(path), {80, 60}, out.data())
                  .ok());  // 1/8 DCT
  const testing::RgbImage expected =
      testing::ReferenceResize(ReferenceDecode(path), 80, 60);
  EXPECT_LT(
      testing::MeanAbsDiff(out.data(), expected.pixels.data(), out.size()),
      2.0);
}

}  // namespace
}  // namespace stoker
