// Label masks in the daemon's own terms: Pillow's and torch's nearest
// resize rules, the mask's geometry for drawn parameters, and the JobSpec
// checks (the bytes against torchvision's functional ops on PIL masks and
// mask tensors are in tests/python/test_masks.py).
#include <string>
#include <vector>

#include "daemon/image/mask_geometry.h"
#include "daemon/spec/job_spec.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

TEST(NearestAxis, IsPillowsScaleTable) {
  // int((x + 0.5) * in / out), the position accumulated: 5 -> 3 reads
  // 0, 2, 4; 3 -> 5 reads 0, 0, 1, 2, 2 (0.3, 0.9, 1.5 - 1 ulp, 2.1, 2.7).
  EXPECT_EQ(NearestAxis(5, 3), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(NearestAxis(3, 5), (std::vector<int>{0, 0, 1, 2, 2}));
  EXPECT_EQ(NearestAxis(4, 4), (std::vector<int>{0, 1, 2, 3}));
  for (int in : {1, 7, 333, 1040}) {
    for (int out : {1, 5, 224, 480}) {
      for (int i : NearestAxis(in, out)) ASSERT_TRUE(i >= 0 && i < in);
    }
  }
}

TEST(NearestAxis, IsTorchsNearestForTensors) {
  // floor(x * in / out), the ratio in float32: 5 -> 3 reads 0, 1, 3.
  EXPECT_EQ(NearestAxis(5, 3, true), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(NearestAxis(3, 6, true), (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_NE(NearestAxis(5, 3, true), NearestAxis(5, 3));
}

TEST(RenderMask, FollowsTheCropBoxAndTheFlip) {
  // A 6x4 mask whose value is its column: a random resized crop's box,
  // then the flip, read as the axis maps say.
  const ImageSize size{6, 4};
  std::vector<uint8_t> mask(size.Pixels());
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = uint8_t(i % 6);
  Pipeline p;
  p.geometry = Pipeline::Geometry::kRandomResizedCrop;
  p.output = {3, 2};
  SampleParams params;
  params.box = {2, 1, 3, 2};  // columns 2..4, rows 1..2, not resized
  params.flip = true;
  std::vector<uint8_t> out(p.output.Pixels()), scratch;
  ASSERT_TRUE(
      RenderMask(mask.data(), size, p, params, 255, false, out.data(), &scratch)
          .ok());
  EXPECT_EQ(out, (std::vector<uint8_t>{4, 3, 2, 4, 3, 2}));
}

TEST(RenderMask, FillsThePaddingWithTheMaskFill) {
  const ImageSize size{2, 2};
  const std::vector<uint8_t> mask = {1, 2, 3, 4};
  Pipeline p;
  p.geometry = Pipeline::Geometry::kRandomCrop;
  p.output = {3, 3};
  p.crop.enabled = p.crop.pad_if_needed = p.crop.pad_end = true;
  const SampleParams params = DrawSampleParams(p, size, 1);
  std::vector<uint8_t> out(p.output.Pixels()), scratch;
  ASSERT_TRUE(
      RenderMask(mask.data(), size, p, params, 200, false, out.data(), &scratch)
          .ok());
  // pad_if_smaller: the right column and the bottom row.
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 200, 3, 4, 200, 200, 200, 200}));
}

TEST(RenderMask, RefusesAResizeOfExtremeShape) {
  // 1 x 70000 with its shorter side to 64: 64 x 4,480,000.
  const ImageSize size{1, 70000};
  const std::vector<uint8_t> mask(size.Pixels(), 3);
  Pipeline p;
  p.shorter_side = 64;
  p.center_crop = true;
  p.output = {64, 64};
  const SampleParams params = DrawSampleParams(p, size, 1);
  std::vector<uint8_t> out(p.output.Pixels()), scratch;
  const absl::Status s = RenderMask(mask.data(), size, p, params, 255, false,
                                    out.data(), &scratch);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("64x4480000"), std::string::npos) << s;
}

v1::JobSpec MaskSpec() {
  v1::JobSpec spec;
  spec.mutable_dataset()->add_shards("/data/seg.tar");
  spec.set_batch_size(4);
  spec.set_slots(2);
  auto* crop = spec.add_pipeline()->mutable_random_resized_crop();
  crop->set_height(32);
  crop->set_width(32);
  auto* image = spec.add_fields();
  image->set_name("jpg");
  image->add_source("jpg");
  auto* mask = spec.add_fields();
  mask->set_name("seg.png");
  mask->add_source("seg.png");
  mask->set_kind(v1::FIELD_KIND_MASK);
  return spec;
}

void ExpectRefused(const v1::JobSpec& spec, const std::string& message) {
  const auto config = ValidateJobSpec(spec);
  ASSERT_FALSE(config.ok()) << message;
  EXPECT_TRUE(absl::IsInvalidArgument(config.status()));
  EXPECT_NE(config.status().message().find(message), std::string::npos)
      << config.status();
}

TEST(ParseMasks, AcceptsAMaskAndRoundTrips) {
  v1::JobSpec spec = MaskSpec();
  spec.set_mask_fill(7);
  const auto config = ValidateJobSpec(spec);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mask_fill, 7);
  EXPECT_EQ(config->fields[1].role, FieldRole::kMask);
  const v1::JobSpec back = EffectiveSpec(*config);
  EXPECT_EQ(back.fields(1).kind(), v1::FIELD_KIND_MASK);
  EXPECT_EQ(back.mask_fill(), 7u);
  EXPECT_TRUE(ValidateJobSpec(MaskSpec()).ok());
  EXPECT_EQ(ValidateJobSpec(MaskSpec())->mask_fill, 255);
}

TEST(ParseMasks, RefusesWhatAMaskCannotFollow) {
  v1::JobSpec spec = MaskSpec();
  spec.set_fast_resample(true);
  ExpectRefused(spec, "cannot follow fast_resample");
  spec = MaskSpec();
  spec.add_pipeline()->mutable_trivial_augment_wide();
  ExpectRefused(spec, "cannot follow an automatic augmentation");
  spec = MaskSpec();
  spec.add_pipeline()->mutable_random_rotation()->set_degrees_max(10);
  spec.set_mask_tensor_nearest(true);
  ExpectRefused(spec, "transforms.v2's rotation or affine warp");
  spec = MaskSpec();
  *spec.add_fields() = spec.fields(1);
  spec.mutable_fields(2)->set_name("second");
  ExpectRefused(spec, "at most one mask field");
  spec = MaskSpec();
  spec.set_mask_fill(256);
  ExpectRefused(spec, "mask_fill must be in [0, 255]");
  spec = MaskSpec();
  spec.mutable_fields(1)->set_kind(v1::FIELD_KIND_BYTES);
  spec.set_mask_fill(3);
  ExpectRefused(spec, "apply to a job with a mask field");
}

TEST(ParseMasks, RandomResizeNeedsACrop) {
  v1::JobSpec spec = MaskSpec();
  spec.clear_pipeline();
  auto* resize = spec.add_pipeline()->mutable_resize();
  resize->set_shorter_side(100);
  resize->set_shorter_side_max(50);
  ExpectRefused(spec, "shorter_side_max must be at least shorter_side");
  resize->set_shorter_side_max(200);
  auto* center = spec.add_pipeline()->mutable_center_crop();
  center->set_height(64);
  center->set_width(64);
  ExpectRefused(spec, "follow it with random_crop");
}

TEST(ParseMasks, AfterFlipMirrorsPadEndAlone) {
  v1::JobSpec spec = MaskSpec();
  spec.clear_pipeline();
  auto* crop = spec.add_pipeline()->mutable_random_crop();
  crop->set_height(16);
  crop->set_width(16);
  crop->set_pad_if_needed(true);
  crop->set_pad_end(true);
  crop->set_after_flip(true);
  spec.add_pipeline()->mutable_random_horizontal_flip()->set_p(0.5);
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  crop->set_pad_left(8);
  ExpectRefused(spec, "applies to pad_end's padding alone");
  crop->set_pad_left(0);
  crop->set_pad_end(false);
  ExpectRefused(spec, "pad_end's padding alone");
  crop->set_pad_end(true);
  spec.mutable_pipeline()->RemoveLast();
  ExpectRefused(spec, "after_flip needs a random_horizontal_flip");
}

}  // namespace
}  // namespace stoker
