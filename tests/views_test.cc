// Views of each image (JobSpec::views) through a real daemon (in this
// process), its shared memory and the C++ SDK: one tensor per view, each of
// its own size and dtype; the first view byte-equal to the same pipeline in
// a job of its own; what the daemon refuses, by name.
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker::testing {
namespace {

class ViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = MakeDataset(daemon_.dir() + "/data", 2, 6, 64, 48);
  }
  JobSpec Base() const {
    return {.dataset_path = daemon_.dir() + "/data",
            .batch_size = 4,
            .slots = 3,
            .seed = 7,
            .shuffle = false};
  }
  static std::vector<Op> Eval() { return {Resize{.height = 32, .width = 40}}; }

  TestDaemon daemon_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
  testdata::GeneratedDataset data_;
};

TEST_F(ViewsTest, EachViewIsATensorOfItsOwn) {
  JobSpec spec = Base();
  spec.views = {
      ImageView{.pipeline = Eval()},
      ImageView{.pipeline = {RandomResizedCrop{.height = 16, .width = 16},
                             RandomHorizontalFlip{0.5f}},
                .dtype = DType::kFloat32}};
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->spec.views.size(), 2u);  // the effective spec keeps them
  EXPECT_EQ(job->spec.views[1].height, 16u);
  JobSpec single = Base();
  single.pipeline = Eval();
  auto alone = client_->CreateJob(single);
  ASSERT_TRUE(alone.ok()) << alone.status();
  auto consumer = client_->Attach(job->id);
  auto reference = client_->Attach(alone->id);
  ASSERT_TRUE(consumer.ok() && reference.ok());
  for (int b = 0; b < 3; ++b) {
    absl::StatusOr<Batch> batch = (*consumer)->Next();
    absl::StatusOr<Batch> want = (*reference)->Next();
    ASSERT_TRUE(batch.ok() && want.ok()) << batch.status() << want.status();
    ASSERT_EQ(batch->fields().size(), 3u);  // images.0, images.1, labels
    const Batch::Field* first = batch->field("images.0");
    const Batch::Field* second = batch->field("images.1");
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_EQ(first->image.dtype, DType::kUInt8);
    EXPECT_EQ(first->image.shape[1], 32);  // NHWC
    EXPECT_EQ(first->image.shape[2], 40);
    EXPECT_EQ(second->image.dtype, DType::kFloat32);
    EXPECT_EQ(second->image.shape[1], 3);  // NCHW
    EXPECT_EQ(second->image.shape[3], 16);
    EXPECT_EQ(batch->image_tensor().data, first->image.data);
    // The first view keeps the sample's draws: the single job's bytes.
    ASSERT_EQ(first->image.bytes, want->images().bytes());
    EXPECT_EQ(std::memcmp(first->image.data, want->images().data(),
                          first->image.bytes),
              0);
    for (uint32_t i = 0; i < batch->size(); ++i) {
      EXPECT_EQ(batch->labels()[i], want->labels()[i]);
      EXPECT_EQ(batch->labels()[i], data_.labels[size_t(b) * 4 + i]);
    }
  }
}

TEST_F(ViewsTest, BadViewsAreRefusedByName) {
  auto refused = [&](const JobSpec& spec, const std::string& why) {
    auto job = client_->CreateJob(spec);
    ASSERT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument)
        << job.status();
    EXPECT_NE(job.status().message().find(why), std::string::npos)
        << job.status();
  };
  JobSpec many = Base();
  many.views.assign(33, ImageView{.pipeline = Eval()});
  refused(many, "views holds 33 views, at most 32");
  JobSpec empty = Base();
  empty.views = {ImageView{.pipeline = Eval()}, ImageView{}};
  refused(empty, "views[1] has no pipeline");
  JobSpec bad = Base();
  bad.views = {ImageView{.pipeline = {Resize{.height = 32, .width = 40},
                                      CenterCrop{.height = 64, .width = 64}}}};
  refused(bad, "views[0]: pipeline[1].center_crop");
  // A view's tensors take the slot's room together.
  JobSpec huge = Base();
  huge.batch_size = 4096;
  huge.views.assign(32,
                    ImageView{.pipeline = {Resize{.height = 512, .width = 512}},
                              .dtype = DType::kFloat32});
  refused(huge, "summed over the views");
}

}  // namespace
}  // namespace stoker::testing
