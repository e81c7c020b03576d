// stoker's evaluation transforms against torchvision's, on the same JPEGs:
// the references were made once with Debian's python3-torchvision by
// tests/fixtures/torchvision/make_fixtures.py and are committed.
//
// By default stoker resamples as Pillow does (daemon/image/pillow_resample):
// its bytes must equal torchvision's. The fast approximate path
// (Pipeline::fast_resample: libyuv's area average, DCT-scaled decode) is
// held to kMaxMeanAbsError; measured on these 150-200 pixel JPEGs, mean
// absolute error per channel value (0..255):
//                                smooth images   grainy images
//   Resize(64) + CenterCrop(56)  1.34, 1.75      5.13, 5.58
//   Resize((48, 40))             1.92, 1.99      5.38, 5.58
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/image/color_jitter.h"
#include "daemon/image/sample_decoder.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

constexpr double kMaxMeanAbsError = 6.0;

struct Fixture {
  std::string file;
  int height = 0;
  int width = 0;
};

std::vector<Fixture> ReadManifest() {
  std::ifstream in(std::string(STOKER_FIXTURES_DIR) + "/torchvision/MANIFEST");
  std::vector<Fixture> fixtures;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Fixture f;
    std::istringstream(line) >> f.file >> f.height >> f.width;
    fixtures.push_back(f);
  }
  return fixtures;
}

Pipeline PipelineFor(const std::string& transform) {
  Pipeline p;
  if (transform == "resize64_crop56") {
    p.shorter_side = 64;
    p.center_crop = true;
    p.output = {56, 56};
  } else {
    p.resized = p.output = {40, 48};
  }
  return p;
}

// Every fixture through its transform, exact or fast, against
// torchvision's bytes: equal (max_mean_abs_error 0) or within the bound.
void CompareWithTorchvision(bool fast, double max_mean_abs_error) {
  const std::vector<Fixture> fixtures = ReadManifest();
  ASSERT_EQ(fixtures.size(), 8u) << "fixtures missing";
  SampleDecoder decoder({});
  for (const Fixture& f : fixtures) {
    const std::string dir = std::string(STOKER_FIXTURES_DIR) + "/torchvision/";
    const std::string jpeg = f.file.substr(0, f.file.find(".jpg") + 4);
    const std::string transform =
        f.file.substr(jpeg.size() + 1, f.file.size() - jpeg.size() - 5);
    Pipeline pipeline = PipelineFor(transform);
    pipeline.fast_resample = fast;
    ASSERT_EQ(pipeline.output.height, f.height) << f.file;
    ASSERT_EQ(pipeline.output.width, f.width) << f.file;
    std::vector<uint8_t> ours(pipeline.BytesPerImage());
    ASSERT_TRUE(decoder
                    .ProcessBytes(testing::FileBytes(dir + jpeg), pipeline, 0,
                                  ours.data())
                    .ok());
    const std::string theirs = testdata::ReadTextFile(dir + f.file);
    ASSERT_EQ(theirs.size(), ours.size()) << f.file;
    const double mae = testing::MeanAbsDiff(
        ours.data(), reinterpret_cast<const uint8_t*>(theirs.data()),
        ours.size());
    std::printf("%-36s %s: mean abs error %.2f\n", f.file.c_str(),
                fast ? "fast" : "exact", mae);
    if (max_mean_abs_error == 0) {
      EXPECT_EQ(std::memcmp(ours.data(), theirs.data(), ours.size()), 0)
          << f.file << ": mean abs error " << mae;
    } else {
      EXPECT_LT(mae, max_mean_abs_error) << f.file;
    }
  }
}

TEST(Torchvision, ResizeAndCenterCropAreTorchvisionsBytes) {
  CompareWithTorchvision(/*fast=*/false, 0);
}

TEST(Torchvision, FastResampleAgreesWithinTheStatedError) {
  CompareWithTorchvision(/*fast=*/true, kMaxMeanAbsError);
}

// The three ColorJitter adjustments with fixed factors equal Pillow's (via
// torchvision.transforms.functional) to the last bit.
TEST(Torchvision, ColorJitterAdjustmentsAreExactlyPillows) {
  const std::string dir = std::string(STOKER_FIXTURES_DIR) + "/torchvision/";
  const std::string input = testdata::ReadTextFile(dir + "jitter_input.rgb");
  constexpr size_t kPixels = 48 * 40;
  ASSERT_EQ(input.size(), kPixels * 3);
  struct Case {
    const char* name;
    void (*adjust)(uint8_t*, size_t, float);
    float factor;
  };
  const Case cases[] = {
      {"brightness_0.6", AdjustBrightness, 0.6f},
      {"brightness_1.3", AdjustBrightness, 1.3f},
      {"contrast_0.5", AdjustContrast, 0.5f},
      {"contrast_1.4", AdjustContrast, 1.4f},
      {"saturation_0.3", AdjustSaturation, 0.3f},
      {"saturation_1.7", AdjustSaturation, 1.7f},
  };
  for (const Case& c : cases) {
    // HWC -> planes, adjust, planes -> HWC.
    std::vector<uint8_t> planes(kPixels * 3);
    for (size_t i = 0; i < kPixels; ++i) {
      for (int ch = 0; ch < 3; ++ch)
        planes[ch * kPixels + i] = input[i * 3 + ch];
    }
    c.adjust(planes.data(), kPixels, c.factor);
    std::string ours(kPixels * 3, '\0');
    for (size_t i = 0; i < kPixels; ++i) {
      for (int ch = 0; ch < 3; ++ch)
        ours[i * 3 + ch] = planes[ch * kPixels + i];
    }
    const std::string theirs =
        testdata::ReadTextFile(dir + "jitter." + c.name + ".rgb");
    ASSERT_EQ(theirs.size(), ours.size()) << c.name;
    size_t differing = 0;
    for (size_t i = 0; i < ours.size(); ++i) differing += ours[i] != theirs[i];
    EXPECT_EQ(differing, 0u) << c.name;
  }
}

TEST(Torchvision, CmykJpegReadsAsPillowReadsIt) {
  const std::string dir = std::string(STOKER_FIXTURES_DIR) + "/torchvision/";
  const std::string jpeg = testdata::ReadTextFile(dir + "cmyk.jpg");
  const std::string theirs = testdata::ReadTextFile(dir + "cmyk.jpg.rgb");
  ASSERT_EQ(theirs.size(), 48u * 40 * 3);
  JpegDecoder decoder({});
  std::vector<uint8_t> ours;
  ImageSize size;
  ASSERT_TRUE(
      testing::DecodeWhole(
          decoder,
          std::span<const uint8_t>(
              reinterpret_cast<const uint8_t*>(jpeg.data()), jpeg.size()),
          &ours, &size)
          .ok());
  ASSERT_EQ(size.width, 48);
  ASSERT_EQ(size.height, 40);
  EXPECT_EQ(testing::MeanAbsDiff(
                ours.data(), reinterpret_cast<const uint8_t*>(theirs.data()),
                ours.size()),
            0.0);
}

}  // namespace
}  // namespace stoker
