#include "daemon/spec/job_spec.h"

#include <string>
#include <utility>
#include <vector>

#include "daemon/jobs/dataset_sources.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

v1::JobSpec ValidSpec() {
  v1::JobSpec spec;
  spec.mutable_dataset()->set_path("/data");
  spec.set_batch_size(32);
  spec.set_slots(4);
  spec.mutable_output()->set_height(224);
  spec.mutable_output()->set_width(224);
  return spec;
}

void ExpectInvalid(const v1::JobSpec& spec, const std::string& field) {
  auto config = ValidateJobSpec(spec);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find(field), absl::string_view::npos)
      << "message does not name " << field << ": " << config.status();
}

TEST(ValidateJobSpec, AcceptsAValidSpecAndFillsDefaults) {
  auto config = ValidateJobSpec(ValidSpec());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->shuffle);
  EXPECT_EQ(config->on_error, OnError::kReplace);
  EXPECT_EQ(config->pipeline.output.width, 224);
  EXPECT_EQ(config->epochs, 0u);
}

TEST(ValidateJobSpec, EachBadFieldIsNamed) {
  v1::JobSpec spec = ValidSpec();
  spec.mutable_dataset()->clear_path();
  ExpectInvalid(spec, "dataset.path");
  spec = ValidSpec();
  spec.set_batch_size(0);
  ExpectInvalid(spec, "batch_size");
  spec.set_batch_size(1'000'000);
  ExpectInvalid(spec, "batch_size");
  spec = ValidSpec();
  spec.set_slots(0);
  ExpectInvalid(spec, "slots");
  spec = ValidSpec();
  spec.mutable_output()->set_height(0);
  ExpectInvalid(spec, "output.height");
  spec = ValidSpec();
  spec.mutable_output()->set_width(100000);
  ExpectInvalid(spec, "output.width");
  spec = ValidSpec();
  spec.set_on_error(static_cast<v1::OnError>(99));
  ExpectInvalid(spec, "on_error");
  spec = ValidSpec();
  spec.mutable_output()->set_dtype(static_cast<v1::DType>(77));
  ExpectInvalid(spec, "output.dtype");
  spec = ValidSpec();
  spec.mutable_output()->set_dtype(v1::DTYPE_INT64);
  ExpectInvalid(spec, "output.dtype");
  spec = ValidSpec();
  spec.set_name(std::string(500, 'n'));
  ExpectInvalid(spec, "name");
}

TEST(ValidateJobSpec, StreamingIsForRemoteShardsAndKept) {
  v1::JobSpec spec = ValidSpec();
  spec.mutable_dataset()->set_shuffle_window(4);
  EXPECT_EQ(ValidateJobSpec(spec).status().code(),
            absl::StatusCode::kInvalidArgument);
  spec.mutable_dataset()->clear_path();
  spec.mutable_dataset()->add_shards("s3://bucket/train-{0..9}.tar");
  spec.mutable_dataset()->set_shuffle_window(4097);
  ExpectInvalid(spec, "dataset.shuffle_window");
  spec.mutable_dataset()->set_shuffle_window(4);
  auto automatic = ValidateJobSpec(spec);
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_FALSE(automatic->streaming.has_value());
  EXPECT_EQ(automatic->shuffle_window, 4u);
  spec.mutable_dataset()->set_streaming(false);
  auto never = ValidateJobSpec(spec);
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(never->streaming, std::optional<bool>(false));
  // The effective spec says what was asked.
  EXPECT_FALSE(EffectiveSpec(*never).dataset().streaming());
  EXPECT_TRUE(EffectiveSpec(*never).dataset().has_streaming());
  EXPECT_EQ(EffectiveSpec(*never).dataset().shuffle_window(), 4u);
}

TEST(ValidateJobSpec, AbsurdSlotSizeIsRefused) {
  v1::JobSpec spec = ValidSpec();
  spec.set_batch_size(4096);
  spec.mutable_output()->set_height(8192);
  spec.mutable_output()->set_width(8192);
  ExpectInvalid(spec, "bytes per slot");
}

TEST(ValidateJobSpec, ExplicitShuffleFalseIsKept) {
  v1::JobSpec spec = ValidSpec();
  spec.set_shuffle(false);
  EXPECT_FALSE(ValidateJobSpec(spec)->shuffle);
}

TEST(ValidateJobSpec, ExactUnlessFastResampleIsAsked) {
  auto exact = ValidateJobSpec(ValidSpec());
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_FALSE(exact->pipeline.fast_resample);
  EXPECT_FALSE(EffectiveSpec(*exact).fast_resample());
  v1::JobSpec spec = ValidSpec();
  spec.set_fast_resample(true);
  auto fast = ValidateJobSpec(spec);
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_TRUE(fast->pipeline.fast_resample);
  EXPECT_TRUE(EffectiveSpec(*fast).fast_resample());  // GetJob shows it
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Jobs share a dataset's index only when their schemas agree: each field
// and source is kept apart in the key (two field lists that once read the
// same as text get two keys), and which field is the image counts in a
// manifest (a file or a text), not in shards (members both).
TEST(DatasetKey, KeepsEveryFieldAndSourceApart) {
  const PathPolicy anywhere;
  const auto key = [&](DatasetKind kind,
                       std::vector<std::pair<std::string, FieldRole>> fields) {
    JobConfig config;
    config.dataset_kind = kind;
    if (kind == DatasetKind::kTarShards) {
      config.shards = {"/data/pairs.tar"};
    } else {
      config.dataset_path = "/data/pairs.csv";
    }
    config.named_fields = true;
    config.fields.clear();
    for (const auto& [source, role] : fields) {
      config.fields.push_back({source, {source}, role});
    }
    return DatasetKey(config, anywhere);
  };
  constexpr auto kImage = FieldRole::kImage;
  constexpr auto kBytes = FieldRole::kBytes;
  const DatasetKind shards = DatasetKind::kTarShards;
  const DatasetKind manifest = DatasetKind::kManifest;
  EXPECT_NE(key(shards, {{"jpg", kImage}, {"imagetxt", kBytes}}),
            key(shards, {{"imagejpg", kBytes}, {"txt", kImage}}));
  EXPECT_NE(key(shards, {{"jpg", kImage}, {"txt", kBytes}}),
            key(shards, {{"jpg", kImage}, {"json", kBytes}}));
  EXPECT_EQ(key(shards, {{"jpg", kImage}, {"txt", kBytes}}),
            key(shards, {{"jpg", kBytes}, {"txt", kImage}}));
  EXPECT_NE(key(manifest, {{"path", kImage}, {"caption", kBytes}}),
            key(manifest, {{"path", kBytes}, {"caption", kImage}}));
  JobConfig classic;
  classic.dataset_kind = shards;
  classic.shards = {"/data/pairs.tar"};
  EXPECT_NE(DatasetKey(classic, anywhere), key(shards, {{"jpg", kImage}}));
}

}  // namespace
}  // namespace stoker
