// One job spec, several forms: the wire's v1::JobSpec (loader.proto), the
// SDK's stoker::JobSpec (client/src/convert.cc converts both ways) and the
// daemon's JobConfig (ValidateJobSpec in, EffectiveSpec out). A spec with
// every wire field set, checked by reflection to set every one, must come
// back whole from each: a field added to the proto and not to one of the
// others fails here. (The ops of a pipeline have their own round trips in
// augment_spec_test.cc; the Python side's keys are checked in
// tests/python/test_spec_fields.py.)
#include <functional>
#include <string>
#include <vector>

#include "client/src/convert.h"
#include "client/src/op_convert.h"
#include "daemon/spec/job_spec.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;

// Every field of `message` and its sub-messages that is not set, by path.
// The pipeline's ops count as set when there is one.
void Unset(const Message& message, const std::string& prefix,
           std::vector<std::string>* unset) {
  const auto* descriptor = message.GetDescriptor();
  const auto* reflection = message.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const std::string path = prefix + field->name();
    if (field->is_repeated()) {
      if (reflection->FieldSize(message, field) == 0) unset->push_back(path);
    } else if (!reflection->HasField(message, field)) {
      unset->push_back(path);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Unset(reflection->GetMessage(message, field), path + ".", unset);
    }
  }
}

// Every field but the pipeline and the dataset's kinds other than shards,
// each unlike its default.
v1::JobSpec Common() {
  v1::JobSpec spec;
  spec.set_batch_size(8);
  spec.set_slots(3);
  spec.mutable_output()->set_dtype(v1::DTYPE_FLOAT16);
  spec.mutable_output()->set_layout(v1::LAYOUT_NCHW);
  spec.mutable_output()->set_float_scale(v1::FLOAT_SCALE_RECIPROCAL);
  spec.mutable_reference()->set_pillow("12.2.0");
  spec.mutable_reference()->set_numpy("2.3.1");
  spec.set_seed(77);
  spec.set_shuffle(false);
  spec.set_drop_last(true);
  spec.set_epochs(5);
  spec.set_on_error(v1::ON_ERROR_FAIL);
  spec.set_name("agreement");
  spec.set_rank(1);
  spec.set_world_size(4);
  spec.set_shard_drop_last(true);
  spec.set_start_epoch(2);
  spec.set_start_batch(3);
  spec.mutable_sharing()->set_mode(v1::CONSUMER_MODE_BROADCAST);
  spec.mutable_sharing()->set_max_lag(2);
  spec.mutable_sharing()->set_on_lag(v1::LAG_POLICY_SKIP);
  spec.mutable_sharing()->set_min_consumers(2);
  spec.set_weight(3);
  spec.set_access_group("trainers");
  spec.set_fast_resample(true);
  spec.set_repeated_augmentations(2);
  return spec;
}

// Common() on an ImageFolder with an output size, and on shards with a
// pipeline: between them every field of the wire's JobSpec is set.
v1::JobSpec WithOutputSize() {
  v1::JobSpec spec = Common();
  spec.mutable_dataset()->set_path("/data/train");
  spec.mutable_output()->set_height(48);
  spec.mutable_output()->set_width(64);
  return spec;
}
v1::JobSpec WithPipeline() {
  v1::JobSpec spec = Common();
  spec.mutable_dataset()->add_shards("/data/shard-{0..3}.tar");
  spec.mutable_dataset()->set_label_field("cls");
  spec.mutable_dataset()->set_manifest("/data/train.csv");
  v1::Resize* resize = spec.add_pipeline()->mutable_resize();
  resize->set_height(40);
  resize->set_width(56);
  resize->set_interpolation(v1::INTERPOLATION_BILINEAR);
  return spec;
}

// Common() on streamed remote shards.
v1::JobSpec WithStreaming() {
  v1::JobSpec spec = Common();
  spec.mutable_dataset()->add_shards("s3://bucket/train-{0..3}.tar");
  spec.mutable_dataset()->set_streaming(false);  // set, so sent
  spec.mutable_dataset()->set_shuffle_window(4);
  spec.mutable_output()->set_height(48);
  spec.mutable_output()->set_width(64);
  return spec;
}

// Common() on shards of named fields, with a pipeline.
v1::JobSpec WithFields() {
  v1::JobSpec spec = Common();
  spec.mutable_dataset()->add_shards("/data/pairs-{0..3}.tar");
  v1::Resize* resize = spec.add_pipeline()->mutable_resize();
  resize->set_height(40);
  resize->set_width(56);
  resize->set_interpolation(v1::INTERPOLATION_BILINEAR);
  v1::SampleField* image = spec.add_fields();
  image->set_name("image");
  image->add_source("jpg");
  image->add_source("png");
  image->set_kind(v1::FIELD_KIND_IMAGE);
  v1::SampleField* caption = spec.add_fields();
  caption->set_name("txt");
  caption->add_source("txt");
  caption->set_kind(v1::FIELD_KIND_BYTES);
  v1::SampleField* mask = spec.add_fields();
  mask->set_name("mask");
  mask->add_source("seg.png");
  mask->set_kind(v1::FIELD_KIND_MASK);
  spec.set_missing(v1::MISSING_FIELD_SKIP);
  spec.set_max_field_bytes(4096);
  spec.set_mask_fill(9);
  spec.set_mask_tensor_nearest(true);
  spec.set_fast_resample(false);  // a mask follows the exact geometry
  return spec;
}

// Common() with views instead of a pipeline and output.
v1::JobSpec WithViews() {
  v1::JobSpec spec = Common();
  spec.mutable_dataset()->set_path("/data/train");
  spec.clear_output();
  for (int v = 0; v < 2; ++v) {
    v1::View* view = spec.add_views();
    v1::Resize* resize = view->add_pipeline()->mutable_resize();
    resize->set_height(32 + 16 * v);
    resize->set_width(32 + 16 * v);
    resize->set_interpolation(v1::INTERPOLATION_BICUBIC);
    view->mutable_output()->set_height(32 + 16 * v);
    view->mutable_output()->set_width(32 + 16 * v);
    view->mutable_output()->set_dtype(v ? v1::DTYPE_FLOAT32 : v1::DTYPE_UINT8);
    view->mutable_output()->set_layout(v1::LAYOUT_NCHW);
    view->mutable_output()->set_float_scale(v ? v1::FLOAT_SCALE_RECIPROCAL
                                              : v1::FLOAT_SCALE_DIVIDE);
  }
  return spec;
}

TEST(SpecAgreement, TheTestSetsEveryWireField) {
  v1::JobSpec both = WithOutputSize();
  both.MergeFrom(WithPipeline());
  both.MergeFrom(WithFields());
  both.MergeFrom(WithViews());
  both.MergeFrom(WithStreaming());
  std::vector<std::string> unset;
  Unset(both, "", &unset);
  EXPECT_TRUE(unset.empty())
      << "fields of v1::JobSpec this test does not set (add them here, to "
         "stoker::JobSpec and JobConfig): "
      << testing::PrintToString(unset);
}

TEST(SpecAgreement, TheSdkSpecCarriesEveryField) {
  // A pipeline sets the output size, so the SDK sends one or the other.
  for (const v1::JobSpec& wire : {WithOutputSize(), WithPipeline(),
                                  WithFields(), WithViews(), WithStreaming()}) {
    v1::Job job;
    *job.mutable_spec() = wire;
    const JobSpec sdk = internal::FromProto(job).spec;
    std::string differences;
    MessageDifferencer differ;
    differ.ReportDifferencesToString(&differences);
    EXPECT_TRUE(differ.Compare(wire, internal::ToProto(sdk))) << differences;
  }
}

// ValidateJobSpec, then EffectiveSpec, of `wire` gives `wire` back, with
// what `adds` says the daemon adds. The daemon keeps what the reference
// versions select, and states it by the oldest version of each behaviour
// (none: the newest): `wire` is given those oldest versions.
void ExpectTheConfigCarries(
    v1::JobSpec wire, const std::function<void(const v1::JobSpec& effective,
                                               v1::JobSpec* expected)>& adds) {
  wire.mutable_reference()->set_pillow("10.0");
  wire.mutable_reference()->set_numpy("2.0");
  auto config = ValidateJobSpec(wire);
  ASSERT_TRUE(config.ok()) << config.status();
  const v1::JobSpec effective = EffectiveSpec(*config);
  v1::JobSpec expected = wire;
  adds(effective, &expected);
  std::string differences;
  MessageDifferencer differ;
  differ.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differ.Compare(expected, effective)) << differences;
}

// What the daemon adds to an output size: the pipeline it stands for.
void AddThePipeline(const v1::JobSpec& effective, v1::JobSpec* expected) {
  *expected->mutable_pipeline() = effective.pipeline();
}

TEST(SpecAgreement, TheDaemonsConfigCarriesEveryField) {
  ExpectTheConfigCarries(WithOutputSize(), AddThePipeline);
}

TEST(SpecAgreement, TheDaemonsConfigCarriesStreaming) {
  ExpectTheConfigCarries(WithStreaming(), AddThePipeline);
}

TEST(SpecAgreement, TheDaemonsConfigCarriesEveryFieldOfNamedFields) {
  // What the daemon adds to a pipeline: the output size it makes.
  ExpectTheConfigCarries(
      WithFields(), [](const v1::JobSpec& effective, v1::JobSpec* expected) {
        expected->mutable_output()->set_height(effective.output().height());
        expected->mutable_output()->set_width(effective.output().width());
      });
}

TEST(SpecAgreement, TheSdkCarriesPillowsBlurAndSolarize) {
  for (const Op& op : {Op(PillowGaussianBlur{0.3f, 1.5f, 0.5f}),
                       Op(RandomSolarize{190.5f, 0.2f})}) {
    v1::Op wire;
    internal::OpToProto(op, &wire);
    const std::optional<Op> back = internal::OpFromProto(wire);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(*back == op);
  }
}

TEST(SpecAgreement, TheDaemonsConfigCarriesEveryFieldOfViews) {
  v1::JobSpec wire = WithViews();
  wire.mutable_reference()->set_pillow("10.0");  // (see above)
  wire.mutable_reference()->set_numpy("2.0");
  auto config = ValidateJobSpec(wire);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->views.size(), 2u);
  EXPECT_EQ(config->views[1].output.width, 48);
  std::string differences;
  MessageDifferencer differ;
  differ.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differ.Compare(wire, EffectiveSpec(*config))) << differences;
}

}  // namespace
}  // namespace stoker
