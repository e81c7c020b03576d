// Pad and RandomCrop: the JobSpec's validation and round trip, and the
// crop's draws and index maps (the bytes are compared with torchvision's in
// tests/python/test_random_crop.py).
#include "daemon/image/random_crop.h"

#include <map>
#include <numeric>
#include <utility>

#include "daemon/image/pipeline.h"
#include "daemon/spec/pipeline_proto.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

v1::Op Resize(int h, int w) {
  v1::Op op;
  op.mutable_resize()->set_height(h);
  op.mutable_resize()->set_width(w);
  return op;
}

v1::Op Crop(int size, int pad,
            v1::PaddingMode mode = v1::PADDING_MODE_CONSTANT) {
  v1::Op op;
  auto* c = op.mutable_random_crop();
  c->set_height(size);
  c->set_width(size);
  c->set_pad_left(pad);
  c->set_pad_top(pad);
  c->set_pad_right(pad);
  c->set_pad_bottom(pad);
  c->set_padding_mode(mode);
  return op;
}

v1::Op Pad(int pad) {
  v1::Op op;
  op.mutable_pad()->set_left(pad);
  op.mutable_pad()->set_right(pad);
  op.mutable_pad()->add_fill(9);
  return op;
}

v1::Op Flip() {
  v1::Op op;
  op.mutable_random_horizontal_flip();
  return op;
}

v1::JobSpec Spec(std::initializer_list<v1::Op> ops) {
  v1::JobSpec spec;
  for (const v1::Op& op : ops) *spec.add_pipeline() = op;
  return spec;
}

void ExpectRefused(const v1::JobSpec& spec, const std::string& words) {
  auto pipeline = ParsePipeline(spec);
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(pipeline.status().message().find(words), absl::string_view::npos)
      << pipeline.status();
}

TEST(RandomCropSpec, AcceptedOrdersRoundTrip) {
  for (const v1::JobSpec& spec :
       {Spec({Crop(32, 4, v1::PADDING_MODE_REFLECT), Flip()}),
        Spec({Resize(36, 40), Crop(32, 0)}), Spec({Pad(4), Crop(32, 0)}),
        Spec({Resize(30, 30), Pad(2), Crop(32, 1, v1::PADDING_MODE_EDGE)})}) {
    auto p = ParsePipeline(spec);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->geometry, Pipeline::Geometry::kRandomCrop);
    EXPECT_EQ(p->output.width, 32);
    v1::JobSpec back;
    PipelineToProto(*p, &back);
    auto again = ParsePipeline(back);
    ASSERT_TRUE(again.ok()) << again.status() << back.DebugString();
    v1::JobSpec twice;
    PipelineToProto(*again, &twice);
    EXPECT_EQ(back.DebugString(), twice.DebugString());
    EXPECT_EQ(back.pipeline_size(), spec.pipeline_size());
  }
}

TEST(RandomCropSpec, BadOrdersAndFieldsAreNamed) {
  ExpectRefused(Spec({Pad(4), Flip()}), "pipeline[0]: impossible order");
  ExpectRefused(Spec({Flip(), Crop(32, 0)}), "pipeline[0]: impossible order");
  ExpectRefused(Spec({Crop(32, 0), Pad(4)}),
                "pipeline[1]: impossible order: pad cannot follow random_crop; "
                "ops go crop or resize, flips");
  v1::Op rrc;
  rrc.mutable_random_resized_crop()->set_height(8);
  rrc.mutable_random_resized_crop()->set_width(8);
  ExpectRefused(Spec({rrc, Crop(8, 0)}), "pipeline[1]: impossible order");
  ExpectRefused(Spec({Crop(0, 0)}), "pipeline[0].random_crop.height");
  ExpectRefused(Spec({Crop(32, 9000)}), "pipeline[0].random_crop.pad_left");
  v1::Op fill = Crop(32, 4);
  fill.mutable_random_crop()->add_fill(1);
  fill.mutable_random_crop()->add_fill(2);
  ExpectRefused(Spec({fill}), "pipeline[0].random_crop.fill needs 0, 1 or 3");
  fill.mutable_random_crop()->add_fill(256);
  ExpectRefused(Spec({fill}), "random_crop.fill values must be in [0, 255]");
  v1::Op mode = Crop(32, 4);
  mode.mutable_random_crop()->set_padding_mode(v1::PaddingMode(77));
  ExpectRefused(Spec({mode}), "random_crop.padding_mode has unknown value 77");
  v1::Op side;
  side.mutable_resize()->set_shorter_side(40);
  EXPECT_TRUE(ParsePipeline(Spec({side, Crop(32, 0)})).ok());
}

// Every place of the crop in the padded image is drawn, about equally often
// (chi-square, 80 degrees of freedom, p ~ 0.001 at 124).
TEST(RandomCrop, DrawsEveryPlaceUniformly) {
  RandomCropSpec spec;
  spec.enabled = true;
  spec.padding = {4, 4, 4, 4};
  std::map<std::pair<int, int>, int> count;
  const int n = 81 * 200;
  CropMaps maps;
  for (int i = 0; i < n; ++i) {
    const CropParams c = DrawRandomCrop(spec, {32, 32}, {32, 32},
                                        SampleKey(3, 0, i), false, &maps);
    ASSERT_TRUE(c.fits);
    ASSERT_EQ(c.padded.width, 40);
    ++count[{c.top, c.left}];
    // The maps are the padded axis from the drawn place: fill then pixels.
    for (int x = 0; x < 32; ++x) {
      const int want = c.left + x - 4;
      EXPECT_EQ(maps.xs[x], want >= 0 && want < 32 ? want : kFillPadding);
    }
  }
  ASSERT_EQ(count.size(), 81u);
  double chi2 = 0;
  for (const auto& [place, k] : count) chi2 += (k - 200.0) * (k - 200.0) / 200;
  EXPECT_LT(chi2, 124) << chi2;
}

TEST(RandomCrop, ExactFitDrawsNothingAndTooSmallFails) {
  RandomCropSpec spec;
  spec.enabled = true;
  CropMaps maps;
  CropParams c = DrawRandomCrop(spec, {20, 10}, {20, 10}, 1, false, &maps);
  EXPECT_TRUE(c.fits);
  EXPECT_EQ(c.top, 0);
  EXPECT_EQ(c.left, 0);
  EXPECT_EQ(c.touched.width, 20);
  c = DrawRandomCrop(spec, {20, 10}, {20, 11}, 1, false, &maps);
  EXPECT_FALSE(c.fits);
  // An image (resized) too large for whole index maps fails, saying so.
  c = DrawRandomCrop(spec, {kMaxCropStage + 1, 3}, {2, 2}, 1, false, &maps);
  EXPECT_FALSE(c.fits);
  EXPECT_TRUE(c.too_large);
  spec.pad_if_needed = true;  // pads (11 - 10) on both sides
  c = DrawRandomCrop(spec, {20, 10}, {20, 11}, 1, false, &maps);
  EXPECT_TRUE(c.fits);
  EXPECT_EQ(c.padded.height, 12);
}

// Where a constant Pad's border meets RandomCrop's constant padding, the
// outer (later) fill shows; a reflecting padding mirrors the inner fill.
TEST(RandomCrop, OuterFillWinsAndReflectionCopiesFill) {
  RandomCropSpec spec;
  spec.enabled = true;
  spec.pad = {1, 1, 1, 1, PadMode::kConstant, {10, 10, 10}};
  spec.padding = {1, 1, 1, 1, PadMode::kConstant, {200, 200, 200}};
  CropMaps maps;
  const CropParams c = DrawRandomCrop(spec, {2, 2}, {6, 6}, 1, false, &maps);
  ASSERT_TRUE(c.fits);
  const uint8_t planes[12] = {50, 51, 52, 53, 50, 51, 52, 53, 50, 51, 52, 53};
  uint8_t out[4 * 36];
  ApplyRandomCrop(spec, maps, c.touched, planes, {6, 6}, out);
  EXPECT_EQ(out[0], 200);     // corner: outer padding
  EXPECT_EQ(out[6 + 1], 10);  // inside it: the Pad's border
  EXPECT_EQ(out[2 * 6 + 2], 50);
  EXPECT_EQ(out[3 * 6 + 3], 53);
  EXPECT_EQ(out[1 * 6 + 0], 200);
  spec.padding.mode = PadMode::kReflect;
  spec.padding.left = spec.padding.right = 2;
  spec.padding.top = spec.padding.bottom = 0;
  const CropParams r = DrawRandomCrop(spec, {2, 2}, {8, 4}, 1, false, &maps);
  ASSERT_TRUE(r.fits);
  // numpy.pad([F, 0, 1, F], 2, "reflect") = [1, 0 | F, 0, 1, F | 1, 0]
  const std::vector<int> want = {1, 0, kFillPad, 0, 1, kFillPad, 1, 0};
  EXPECT_EQ(maps.xs, want);
}

// A pad wider than the image, lopsided: numpy 1.24 and 2.2 (which fixed
// numpy issue 25926) give different axes; the values are theirs.
TEST(RandomCrop, WidePadsReflectAsTheReferenceNumpyDoes) {
  struct Case {
    PadMode mode;
    int width, left, right;
    std::vector<int> numpy1, numpy2;
  };
  const Case cases[] = {
      {PadMode::kReflect,
       3,
       1,
       8,
       {1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 0},
       {1, 0, 1, 2, 1, 0, 1, 2, 1, 0, 1, 2}},
      {PadMode::kSymmetric,
       2,
       1,
       9,
       {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0},
       {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}},
  };
  for (const Case& c : cases) {
    RandomCropSpec spec;
    spec.enabled = true;
    spec.padding = {c.left, 0, c.right, 0, c.mode, {0, 0, 0}};
    const ImageSize padded = {c.width + c.left + c.right, 1};
    CropMaps maps;
    spec.whole_periods = false;
    ASSERT_TRUE(
        DrawRandomCrop(spec, {c.width, 1}, padded, 1, false, &maps).fits);
    EXPECT_EQ(maps.xs, c.numpy1) << "numpy < 2.1, width " << c.width;
    spec.whole_periods = true;
    ASSERT_TRUE(
        DrawRandomCrop(spec, {c.width, 1}, padded, 1, false, &maps).fits);
    EXPECT_EQ(maps.xs, c.numpy2) << "numpy >= 2.1, width " << c.width;
  }
}

TEST(RandomCropSpec, ReferenceVersionsChooseTheBehaviours) {
  v1::JobSpec spec = Spec({Crop(8, 2)});
  auto newest = ParsePipeline(spec);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_TRUE(newest->crop.whole_periods);
  EXPECT_TRUE(newest->palette_tail_black);
  spec.mutable_reference()->set_numpy("1.24.2");
  spec.mutable_reference()->set_pillow("9.4.0");
  auto old = ParsePipeline(spec);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_FALSE(old->crop.whole_periods);
  EXPECT_FALSE(old->palette_tail_black);
  v1::JobSpec back;
  PipelineToProto(*old, &back);  // the effective spec keeps the behaviours
  auto again = ParsePipeline(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->crop.whole_periods);
  EXPECT_FALSE(again->palette_tail_black);
  spec.mutable_reference()->set_numpy("2.1.0rc1");
  spec.mutable_reference()->set_pillow("10.1");
  auto modern = ParsePipeline(spec);
  ASSERT_TRUE(modern.ok()) << modern.status();
  EXPECT_TRUE(modern->crop.whole_periods);
  EXPECT_TRUE(modern->palette_tail_black);
  spec.mutable_reference()->set_numpy("two");
  ExpectRefused(spec, "reference.numpy \"two\" is not a MAJOR.MINOR version");
}

// Pillow's order of resize passes by version, kept through the effective
// spec (the newest version of each order stands for it).
TEST(RandomCropSpec, ReferencePillowChoosesTheOrderOfResizePasses) {
  const std::pair<const char*, PassOrder> cases[] = {
      {"9.4.0", PassOrder::kHorizontalFirst},
      {"12.1.1", PassOrder::kHorizontalFirst},
      {"12.2.0", PassOrder::kTallVerticalFirst},
      {"12.3.0", PassOrder::kTallVerticalFirst},
      {"13.0.0", PassOrder::kShrinkVerticalFirst},
      {"14.1", PassOrder::kShrinkVerticalFirst},
      {"", PassOrder::kShrinkVerticalFirst}};
  for (const auto& [version, order] : cases) {
    v1::JobSpec spec = Spec({Crop(8, 2)});
    spec.mutable_reference()->set_pillow(version);
    auto parsed = ParsePipeline(spec);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->resample_order, order) << version;
    v1::JobSpec back;
    PipelineToProto(*parsed, &back);
    auto again = ParsePipeline(back);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->resample_order, order) << version;
    EXPECT_EQ(again->palette_tail_black, parsed->palette_tail_black);
  }
}

// The three orders' rules on sizes either side of each threshold.
TEST(PassOrderRule, VerticalFirstAsEachPillowDecides) {
  using O = PassOrder;
  EXPECT_FALSE(VerticalFirst(O::kHorizontalFirst, {10, 2000}, {5, 100}));
  EXPECT_TRUE(VerticalFirst(O::kTallVerticalFirst, {10, 1001}, {12, 1000}));
  EXPECT_FALSE(VerticalFirst(O::kTallVerticalFirst, {10, 1000}, {5, 10}));
  EXPECT_FALSE(VerticalFirst(O::kTallVerticalFirst, {10, 2000}, {5, 2000}));
  // 13.0: H - h > 0 and H - h > 2 (W - w).
  EXPECT_TRUE(VerticalFirst(O::kShrinkVerticalFirst, {500, 375}, {400, 3}));
  EXPECT_FALSE(VerticalFirst(O::kShrinkVerticalFirst, {500, 375}, {241, 183}));
  EXPECT_TRUE(VerticalFirst(O::kShrinkVerticalFirst, {375, 500}, {241, 183}));
  EXPECT_FALSE(VerticalFirst(O::kShrinkVerticalFirst, {300, 300}, {200, 100}));
  EXPECT_TRUE(VerticalFirst(O::kShrinkVerticalFirst, {300, 300}, {200, 99}));
  EXPECT_TRUE(VerticalFirst(O::kShrinkVerticalFirst, {100, 300}, {400, 299}));
  EXPECT_FALSE(VerticalFirst(O::kShrinkVerticalFirst, {100, 300}, {400, 300}));
  EXPECT_FALSE(VerticalFirst(O::kShrinkVerticalFirst, {100, 300}, {400, 900}));
}

}  // namespace
}  // namespace stoker
