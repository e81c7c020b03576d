// The automatic augmentation and erasing ops of a JobSpec: validation with
// errors naming the op and field, the order they take, the round trip
// through PipelineToProto, and the draws' ranges.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "daemon/image/aug_mix.h"
#include "daemon/image/auto_augment.h"
#include "daemon/image/pipeline.h"
#include "daemon/spec/pipeline_proto.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

v1::JobSpec Spec(std::initializer_list<v1::Op> ops, bool float_output = true) {
  v1::JobSpec spec;
  v1::Op crop;
  crop.mutable_random_resized_crop()->set_height(32);
  crop.mutable_random_resized_crop()->set_width(32);
  *spec.add_pipeline() = crop;
  for (const v1::Op& op : ops) *spec.add_pipeline() = op;
  if (float_output) spec.mutable_output()->set_dtype(v1::DTYPE_FLOAT32);
  return spec;
}

v1::Op Wide() {
  v1::Op op;
  op.mutable_trivial_augment_wide();
  return op;
}

v1::Op Erase() {
  v1::Op op;
  op.mutable_random_erasing()->set_p(0.25f);
  return op;
}

void ExpectRefused(const v1::JobSpec& spec, const std::string& words) {
  auto pipeline = ParsePipeline(spec);
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(pipeline.status().message().find(words), absl::string_view::npos)
      << pipeline.status();
}

TEST(AugmentSpec, DefaultsAreTorchvisionsAndRoundTrip) {
  v1::Op rand;
  rand.mutable_rand_augment()->add_fill(7);
  auto p = ParsePipeline(Spec({rand, Erase()}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->augment.kind, AutoAugmentSpec::Kind::kRandAugment);
  EXPECT_EQ(p->augment.num_ops, 2);
  EXPECT_EQ(p->augment.magnitude, 9);
  EXPECT_EQ(p->augment.num_magnitude_bins, 31);
  EXPECT_EQ(p->augment.style.interpolation, Interpolation::kNearest);
  EXPECT_EQ(p->augment.style.fill, (FillColor{7, 7, 7}));
  EXPECT_TRUE(p->erasing.enabled);
  EXPECT_FLOAT_EQ(p->erasing.scale_max, 0.33f);
  v1::JobSpec back;
  PipelineToProto(*p, &back);
  auto again = ParsePipeline(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->augment.style.fill, p->augment.style.fill);
  EXPECT_EQ(again->augment.num_ops, 2);
  EXPECT_TRUE(again->erasing.enabled);
  EXPECT_FLOAT_EQ(again->erasing.p, 0.25f);
}

TEST(AugmentSpec, RefusesBadFieldsNamingThem) {
  v1::Op bins = Wide();
  bins.mutable_trivial_augment_wide()->set_num_magnitude_bins(1);
  ExpectRefused(Spec({bins}), "trivial_augment_wide.num_magnitude_bins");
  v1::Op magnitude;
  magnitude.mutable_rand_augment()->set_magnitude(31);
  ExpectRefused(Spec({magnitude}), "rand_augment.magnitude");
  v1::Op ops;
  ops.mutable_rand_augment()->set_num_ops(17);
  ExpectRefused(Spec({ops}), "rand_augment.num_ops");
  v1::Op fill = Wide();
  fill.mutable_trivial_augment_wide()->add_fill(256);
  ExpectRefused(Spec({fill}), "fill values must be in [0, 255]");
  // Bicubic is Pillow's affine filter for the PIL ops; AugMix warps a
  // tensor, where it is torch's.
  v1::Op bicubic = Wide();
  bicubic.mutable_trivial_augment_wide()->set_interpolation(
      v1::INTERPOLATION_BICUBIC);
  EXPECT_TRUE(ParsePipeline(Spec({bicubic})).ok());
  v1::Op mix;
  mix.mutable_aug_mix()->set_interpolation(v1::INTERPOLATION_BICUBIC);
  ExpectRefused(Spec({mix}), "aug_mix.interpolation must be NEAREST or");
  v1::Op table = Wide();
  auto* t = table.mutable_trivial_augment_wide()->add_magnitudes();
  t->set_op("Rotate");
  t->add_values(1);
  ExpectRefused(Spec({table}), "of Rotate needs 31 values");
  t->set_op("Equalize");
  ExpectRefused(Spec({table}), "names no op");
  t->set_op("Rotate");
  for (int i = 1; i < 31; ++i) t->add_values(1e9f);
  ExpectRefused(Spec({table}), "outside the op's range");
  v1::Op erase = Erase();
  erase.mutable_random_erasing()->set_scale_min(0.5f);
  erase.mutable_random_erasing()->set_scale_max(0.1f);
  ExpectRefused(Spec({erase}), "random_erasing.scale_min");
  ExpectRefused(Spec({Erase()}, false), "random_erasing needs output.dtype");
}

TEST(AugmentSpec, WarpsAreBoundedAndRoundTrip) {
  v1::Op affine;
  auto* a = affine.mutable_random_affine();
  a->set_degrees_min(-10);
  a->set_degrees_max(10);
  a->set_shear_x_min(-5);
  a->set_shear_x_max(5);
  a->set_scale_min(0.5f);
  a->set_scale_max(1.5f);
  auto p = ParsePipeline(Spec({affine}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->warp.kind, WarpSpec::Kind::kAffine);
  EXPECT_TRUE(p->warp.shear_x);
  EXPECT_FALSE(p->warp.shear_y);
  EXPECT_FALSE(p->warp.translate);
  v1::JobSpec back;
  PipelineToProto(*p, &back);
  auto again = ParsePipeline(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ(again->warp.scale_max, 1.5);
  a->set_shear_x_max(89);
  ExpectRefused(Spec({affine}), "random_affine.shear_x_min");
  a->set_shear_x_max(5);
  a->set_degrees_min(20);
  ExpectRefused(Spec({affine}), "random_affine.degrees_min");
  v1::Op rotation;
  rotation.mutable_random_rotation()->set_degrees_max(1e9f);
  ExpectRefused(Spec({rotation}), "random_rotation.degrees_min");
  ExpectRefused(Spec({Wide(), rotation}), "impossible order");
}

TEST(AugmentSpec, TakesItsPlaceInTheOrder) {
  v1::Op flip;
  flip.mutable_random_horizontal_flip();
  ExpectRefused(Spec({Wide(), flip}), "impossible order");
  ExpectRefused(Spec({Erase(), Wide()}), "impossible order");
  v1::Op rand;
  rand.mutable_rand_augment();
  ExpectRefused(Spec({Wide(), rand}), "impossible order");
  EXPECT_TRUE(ParsePipeline(Spec({flip, Wide(), Erase()})).ok());
}

TEST(DrawAutoAugment, DrawsEveryOpAndBinWithinTheSpace) {
  AutoAugmentSpec spec;
  spec.kind = AutoAugmentSpec::Kind::kTrivialAugmentWide;
  std::set<int> ops;
  std::set<double> rotations;
  for (uint64_t key = 0; key < 5000; ++key) {
    const DrawnOps d = DrawAutoAugment(spec, {224, 224}, key);
    ASSERT_EQ(d.count, 1);
    ops.insert(static_cast<int>(d.ops[0].op));
    EXPECT_NE(d.ops[0].op, AugmentOp::kInvert);
    if (d.ops[0].op == AugmentOp::kRotate) {
      EXPECT_LE(std::abs(d.ops[0].magnitude), 135.0);
      rotations.insert(d.ops[0].magnitude);
    }
  }
  EXPECT_EQ(ops.size(), 14u);
  EXPECT_GT(rotations.size(), 50u);  // 31 bins, both signs
}

TEST(DrawSampleParams, AugmentationIsAPureFunctionOfTheKey) {
  Pipeline p;
  p.output = {64, 64};
  p.augment.kind = AutoAugmentSpec::Kind::kRandAugment;
  p.augment.num_ops = 3;
  const SampleParams a = DrawSampleParams(p, {100, 80}, 42);
  const SampleParams b = DrawSampleParams(p, {100, 80}, 42);
  ASSERT_EQ(a.augment.count, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.augment.ops[i].op, b.augment.ops[i].op);
    EXPECT_EQ(a.augment.ops[i].magnitude, b.augment.ops[i].magnitude);
  }
}

v1::Op Blur(int kx, int ky) {
  v1::Op op;
  op.mutable_gaussian_blur()->set_kernel_x(kx);
  op.mutable_gaussian_blur()->set_kernel_y(ky);
  return op;
}

TEST(BlurSpec, FieldsAreCheckedAndRoundTrip) {
  v1::Op blur = Blur(23, 5);
  blur.mutable_gaussian_blur()->set_p(0.5f);
  auto p = ParsePipeline(Spec({blur, Wide()}));  // 32x32 images
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->blur.kernel_x, 23);
  EXPECT_DOUBLE_EQ(p->blur.sigma_min, 0.1);
  EXPECT_DOUBLE_EQ(p->blur.sigma_max, 2.0);
  EXPECT_DOUBLE_EQ(p->blur.p, 0.5);
  v1::JobSpec back;
  PipelineToProto(*p, &back);
  auto again = ParsePipeline(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->blur.kernel_y, 5);
  EXPECT_DOUBLE_EQ(again->blur.p, 0.5);
  ExpectRefused(Spec({Blur(4, 3)}), "gaussian_blur.kernel_x must be odd");
  {
    v1::JobSpec big;
    v1::Op resize;
    resize.mutable_resize()->set_height(8192);
    resize.mutable_resize()->set_width(8192);
    *big.add_pipeline() = resize;
    *big.add_pipeline() = Blur(255, 255);
    ExpectRefused(big,
                  "gaussian_blur.kernel_x * kernel_y * the image's "
                  "pixels must be at most");
  }
  ExpectRefused(Spec({Blur(3, 65)}),
                "gaussian_blur.kernel_y must be below twice the image's "
                "height (32), got 65");
  v1::Op sigma = Blur(3, 3);
  sigma.mutable_gaussian_blur()->set_sigma_min(0);
  ExpectRefused(Spec({sigma}), "gaussian_blur.sigma_min and sigma_max");
  ExpectRefused(Spec({Wide(), Blur(3, 3)}), "impossible order");
}

TEST(BlurSpec, PillowsBlurAndSolarizeAreCheckedAndRoundTrip) {
  v1::Op pillow;
  pillow.mutable_pillow_gaussian_blur()->set_radius_min(0.5f);
  pillow.mutable_pillow_gaussian_blur()->set_p(0.25f);
  v1::Op solarize;
  solarize.mutable_random_solarize()->set_threshold(190.5f);
  auto p = ParsePipeline(Spec({pillow, solarize, Wide()}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->blur.enabled && p->blur.pillow);
  EXPECT_DOUBLE_EQ(p->blur.sigma_min, 0.5);
  EXPECT_DOUBLE_EQ(p->blur.sigma_max, 2.0);  // the default
  EXPECT_DOUBLE_EQ(p->blur.p, 0.25);
  EXPECT_DOUBLE_EQ(p->solarize.threshold, 190.5);
  EXPECT_DOUBLE_EQ(p->solarize.p, 0.5);  // torchvision's default
  v1::JobSpec back;
  PipelineToProto(*p, &back);
  auto again = ParsePipeline(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->blur.pillow);
  EXPECT_DOUBLE_EQ(again->blur.sigma_min, 0.5);
  EXPECT_DOUBLE_EQ(again->blur.p, 0.25);
  EXPECT_DOUBLE_EQ(again->solarize.threshold, 190.5);
  // One blur per pipeline; solarize after the blur, before augmenting.
  ExpectRefused(Spec({Blur(3, 3), pillow}), "impossible order");
  ExpectRefused(Spec({solarize, pillow}), "impossible order");
  ExpectRefused(Spec({Wide(), solarize}), "impossible order");
  v1::Op radius = pillow;
  radius.mutable_pillow_gaussian_blur()->set_radius_min(3);
  ExpectRefused(Spec({radius}),
                "pillow_gaussian_blur.radius_min and radius_max must satisfy");
  v1::Op threshold = solarize;
  threshold.mutable_random_solarize()->set_threshold(300);
  ExpectRefused(Spec({threshold}),
                "random_solarize.threshold must be in [0, 256], got 300");
  threshold.mutable_random_solarize()->set_threshold(9);
  threshold.mutable_random_solarize()->set_p(2);
  ExpectRefused(Spec({threshold}), "random_solarize.p must be in [0, 1]");
}

// sigma is uniform over its range (Kolmogorov-Smirnov, p ~ 0.001 at
// 1.95 / sqrt(n)), and the blur applies with its probability.
TEST(BlurSpec, SigmaIsUniformAndTheCoinIsFair) {
  BlurSpec spec;
  spec.enabled = true;
  spec.sigma_min = 0.5;
  spec.sigma_max = 2.5;
  spec.p = 0.3;
  const int n = 20000;
  std::vector<double> sigmas;
  int applied = 0;
  for (int i = 0; i < n; ++i) {
    const BlurParams b = DrawBlur(spec, SampleKey(9, 1, i));
    ASSERT_GE(b.sigma, 0.5f);
    ASSERT_LE(b.sigma, 2.5f);
    sigmas.push_back(b.sigma);
    applied += b.apply;
  }
  std::sort(sigmas.begin(), sigmas.end());
  double d = 0;
  for (int i = 0; i < n; ++i) {
    const double cdf = (sigmas[i] - 0.5) / 2.0;
    d = std::max(
        {d, std::abs(cdf - double(i) / n), std::abs(cdf - double(i + 1) / n)});
  }
  EXPECT_LT(d, 1.95 / std::sqrt(double(n)));
  EXPECT_NEAR(applied / double(n), 0.3, 0.015);  // ~4.6 sigma
}

TEST(AugMixSpec, DefaultsAreTorchvisionsAndFieldsAreChecked) {
  v1::Op mix;
  mix.mutable_aug_mix();
  auto p = ParsePipeline(Spec({mix}));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->augment.kind, AutoAugmentSpec::Kind::kAugMix);
  EXPECT_EQ(p->augment.severity, 3);
  EXPECT_EQ(p->augment.mixture_width, 3);
  EXPECT_EQ(p->augment.chain_depth, -1);
  EXPECT_TRUE(p->augment.all_ops);
  EXPECT_FALSE(p->augment.has_fill);
  EXPECT_EQ(p->augment.style.interpolation, Interpolation::kBilinear);
  EXPECT_EQ(AugmentationSpace(p->augment).size(), 13u);
  bool is_signed = false;
  // AugMix's own tables: translations a third of the side, 4-bit posterize.
  EXPECT_FLOAT_EQ(
      MagnitudeTable(p->augment, AugmentOp::kTranslateX, {30, 60}, &is_signed)
          .back(),
      10.0f);
  EXPECT_EQ(
      MagnitudeTable(p->augment, AugmentOp::kPosterize, {32, 32}, &is_signed)
          .front(),
      4.0f);
  v1::JobSpec back;
  PipelineToProto(*p, &back);
  auto again = ParsePipeline(back);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->augment.style.interpolation, Interpolation::kBilinear);
  EXPECT_FALSE(again->augment.has_fill);
  const std::pair<const char*, std::function<void(v1::AugMix*)>> bad[] = {
      {"aug_mix.severity", [](v1::AugMix* m) { m->set_severity(11); }},
      {"aug_mix.mixture_width", [](v1::AugMix* m) { m->set_mixture_width(0); }},
      {"aug_mix.chain_depth", [](v1::AugMix* m) { m->set_chain_depth(17); }},
      {"aug_mix.alpha", [](v1::AugMix* m) { m->set_alpha(0); }},
  };
  for (const auto& [words, breaks] : bad) {
    v1::Op op;
    breaks(op.mutable_aug_mix());
    ExpectRefused(Spec({op}), words);
  }
  ExpectRefused(Spec({mix, Wide()}), "impossible order");
  {
    v1::JobSpec big;
    v1::Op resize, heavy;
    resize.mutable_resize()->set_height(4096);
    resize.mutable_resize()->set_width(4096);
    heavy.mutable_aug_mix()->set_mixture_width(16);
    heavy.mutable_aug_mix()->set_chain_depth(16);
    *big.add_pipeline() = resize;
    *big.add_pipeline() = heavy;
    ExpectRefused(big,
                  "aug_mix.mixture_width * chain_depth * the image's "
                  "pixels must be at most");
  }
}

// A tiny alpha makes Gamma draws underflow; the weights stay finite and
// sum to one, as torch's clamped draws do.
TEST(AugMixSpec, TinyAlphaGivesFiniteWeights) {
  AutoAugmentSpec spec;
  spec.kind = AutoAugmentSpec::Kind::kAugMix;
  spec.alpha = 0.01;
  for (uint64_t key = 0; key < 20000; ++key) {
    const DrawnAugMix d = DrawAugMix(spec, {32, 32}, key);
    float sum = d.original;
    ASSERT_TRUE(std::isfinite(d.original));
    for (float w : d.weights) {
      ASSERT_TRUE(std::isfinite(w));
      sum += w;
    }
    ASSERT_NEAR(sum, 1.0f, 1e-5);
  }
}

v1::Op Choice(std::initializer_list<v1::Op> options,
              std::initializer_list<float> p = {}) {
  v1::Op op;
  for (const v1::Op& o : options)
    *op.mutable_random_choice()->add_options() = o;
  for (float w : p) op.mutable_random_choice()->add_p(w);
  return op;
}

TEST(ChoiceSpec, RoundTripsAndDrawsByWeight) {
  const v1::Op choice = Choice({Blur(3, 3), Blur(7, 7), Blur(9, 9)}, {1, 0, 3});
  auto p = ParsePipeline(Spec({choice, Wide()}));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(p->choice);
  EXPECT_EQ(p->choice->stage, ImageStage::kBlur);
  EXPECT_EQ(p->choice->options[2].blur.kernel_x, 9);
  EXPECT_FALSE(p->blur.enabled);  // the choice holds the blurs
  v1::JobSpec back;
  PipelineToProto(*p, &back);
  ASSERT_EQ(back.pipeline_size(), 3);
  EXPECT_EQ(back.pipeline(1).random_choice().options_size(), 3);
  EXPECT_TRUE(ParsePipeline(back).ok());
  int counts[3] = {0, 0, 0};
  for (uint64_t key = 0; key < 8000; ++key) {
    const SampleParams s = DrawSampleParams(*p, {64, 64}, key);
    ASSERT_GE(s.choice, 0);
    ++counts[s.choice];
    ASSERT_EQ(s.chosen.size(), 1u);
    EXPECT_TRUE(s.chosen[0].blur.apply);
  }
  EXPECT_EQ(counts[1], 0);  // weight 0
  EXPECT_NEAR(counts[0] / 8000.0, 0.25, 0.025);
}

TEST(ChoiceSpec, BadChoicesAreNamed) {
  v1::Op flip, vflip;
  flip.mutable_random_horizontal_flip();
  vflip.mutable_random_vertical_flip();
  ExpectRefused(Spec({Choice({flip, vflip})}),
                "pipeline[1].random_choice.options[1] must be an image op");
  ExpectRefused(Spec({Choice({flip})}), "random_choice.options needs 2 to 16");
  {  // an option that never flips still round-trips
    v1::Op never = flip;
    never.mutable_random_horizontal_flip()->set_p(0);
    auto p = ParsePipeline(Spec({Choice({flip, never})}));
    ASSERT_TRUE(p.ok()) << p.status();
    v1::JobSpec back;
    PipelineToProto(*p, &back);
    EXPECT_EQ(back.pipeline(1).random_choice().options_size(), 2);
    EXPECT_TRUE(ParsePipeline(back).ok());
  }
  ExpectRefused(Spec({Choice({flip, flip}, {1})}),
                "random_choice.p needs one weight per option (2), got 1");
  ExpectRefused(Spec({Choice({flip, flip}, {0, 0})}), "weights are all 0");
  ExpectRefused(Spec({Choice({Choice({flip, flip}), flip})}),
                "random_choice.options[0] must be an image op");
  ExpectRefused(Spec({Choice({Blur(4, 3), Blur(3, 3)})}),
                "random_choice.options[0]: pipeline[1].gaussian_blur.kernel_x");
  ExpectRefused(Spec({Wide(), Choice({Blur(3, 3), Blur(5, 5)})}),
                "impossible order");
}

}  // namespace
}  // namespace stoker
