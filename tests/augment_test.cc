// The sample pipeline end to end through a real daemon: determinism across
// worker counts and restarts, output dtypes and layouts, flips, and the
// evaluation pipeline against an independent reference.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testing::MakeDataset;
using testing::TestDaemon;

void AppendBatch(const Batch& batch, std::string* bytes) {
  const Batch::ImageTensor images = batch.image_tensor();
  bytes->append(static_cast<const char*>(images.data), images.bytes);
  bytes->append(reinterpret_cast<const char*>(batch.labels().data()),
                batch.labels().size_bytes());
  bytes->append(reinterpret_cast<const char*>(batch.indices().data()),
                batch.indices().size_bytes());
}

// Every byte of every batch of a job, in order: images, labels, indices.
std::string JobBytes(TestDaemon& daemon, const JobSpec& spec) {
  auto client = daemon.Connect();
  auto job = client->CreateJob(spec);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return "";
  auto consumer = client->Attach(job->id);
  std::string bytes;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) {
      EXPECT_EQ(batch.status().code(), absl::StatusCode::kOutOfRange);
      break;
    }
    AppendBatch(*batch, &bytes);
  }
  return bytes;
}

// Consumes the first `released` batches of a job and releases them, takes
// one more without releasing it, and returns the bytes of the released ones
// and the consumer's position, saved and read back as a trainer would.
std::string ConsumeThenStop(TestDaemon& daemon, const JobSpec& spec,
                            int released, Position* position) {
  auto client = daemon.Connect();
  auto job = client->CreateJob(spec);
  auto consumer = client->Attach(job->id);
  std::string bytes;
  for (int i = 0; i < released; ++i) {
    auto batch = (*consumer)->Next();
    EXPECT_TRUE(batch.ok()) << batch.status();
    AppendBatch(*batch, &bytes);
  }                                 // each released as it goes out of scope
  auto held = (*consumer)->Next();  // in flight when the trainer dies
  EXPECT_TRUE(held.ok());
  auto saved = ParsePosition(SerializePosition((*consumer)->position()));
  EXPECT_TRUE(saved.ok());
  *position = *saved;
  return bytes;
}

float HalfToFloat(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(float(mantissa), -24);
  return sign * std::ldexp(float(mantissa + 1024), exponent - 25);
}

class AugmentTest : public ::testing::Test {
 protected:
  AugmentTest() { data_ = MakeDataset(dir_.path() + "/data", 3, 7, 120, 90); }
  // RandomResizedCrop + flip + ColorJitter: every random op.
  JobSpec Train(uint64_t seed) {
    JobSpec spec{.dataset_path = dir_.path() + "/data",
                 .batch_size = 5,
                 .slots = 3,
                 .pipeline = TrainPipeline(48),
                 .seed = seed,
                 .epochs = 2};
    spec.pipeline.push_back(ColorJitter{});
    return spec;
  }

  testdata::TempDir dir_{"stoker-augment"};
  testdata::GeneratedDataset data_;
};

TEST_F(AugmentTest, OneOrFourWorkersAndARestartGiveByteIdenticalEpochs) {
  std::string one, four, restarted;
  {
    TestDaemon daemon({.workers = 1});
    one = JobBytes(daemon, Train(3));
  }
  {
    TestDaemon daemon({.workers = 4});
    four = JobBytes(daemon, Train(3));
  }
  {
    TestDaemon daemon({.workers = 2});
    restarted = JobBytes(daemon, Train(3));
  }
  ASSERT_EQ(one.size(), 2u * 21 * (48 * 48 * 3 + 16));
  EXPECT_TRUE(one == four) << "1 and 4 workers disagree";
  EXPECT_TRUE(one == restarted) << "a new daemon disagrees";
}

// Every op of stoker/ops.h through the SDK: the daemon takes it, gives it
// back unchanged in the job's spec, and serves the same bytes with one
// worker or four.
TEST_F(AugmentTest, EveryOpRoundTripsThroughTheSdkAndIsDeterministic) {
  const Fill fill = {10, 20, 30};
  const std::vector<std::vector<Op>> pipelines = {
      {Pad{2, 3, 4, 5, fill, PaddingMode::kConstant},
       RandomCrop{40, 44, 1, 1, 1, 1, true, fill, PaddingMode::kReflect},
       RandomHorizontalFlip{0.5f}, RandomVerticalFlip{0.25f},
       RandomRotation{-20, 20, Interpolation::kBilinear, fill, 0.5f},
       ColorJitter{0.2f, 0.2f, 0.2f, 0.1f, 0.8f}, RandomGrayscale{0.2f},
       GaussianBlur{5, 7, 0.3f, 1.5f, 0.5f},
       TrivialAugmentWide{31, Interpolation::kBilinear, fill}, Normalize{},
       RandomErasing{0.5f, 0.02f, 0.33f, 0.3f, 3.3f, {0.1f, 0.2f, 0.3f}}},
      {RandomResizedCrop{48, 48},
       RandomAffine{-10, 10, 0.1f, 0.2f, 0.9f, 1.1f, -5, 5, 0, 0,
                    Interpolation::kNearest, fill, 1.0f},
       RandAugment{3, 7, 21, Interpolation::kNearest, fill}},
      {Resize{56}, CenterCrop{48, 48},
       AutoAugment{AutoAugmentPolicy::kCifar10, Interpolation::kNearest, fill}},
      {Resize{56}, CenterCrop{48, 48},
       RandomChoice{{GaussianBlur{3, 3}, GaussianBlur{5, 5, 0.5f, 1.0f}},
                    {1.0f, 2.0f}},
       AugMix{5, 2, 2, 0.5f, false}},
      {Resize{56}, CenterCrop{48, 48},
       AugMix{3, 3, -1, 1.0f, true, Interpolation::kNearest, fill}},
      {Resize{0, 36, 36},
       RandomCrop{32, 32, 4, 4, 4, 4, false, fill, PaddingMode::kSymmetric}}};
  for (const std::vector<Op>& pipeline : pipelines) {
    JobSpec spec = Train(4);
    spec.pipeline = pipeline;
    if (std::any_of(pipeline.begin(), pipeline.end(), [](const Op& op) {
          return std::holds_alternative<RandomErasing>(op);
        })) {
      spec.dtype = DType::kFloat32;
    }
    spec.repeated_augmentations = 2;
    std::string one, four;
    {
      TestDaemon daemon({.workers = 1});
      auto client = daemon.Connect();
      auto job = client->CreateJob(spec);
      ASSERT_TRUE(job.ok()) << job.status();
      auto info = client->GetJob(job->id);
      ASSERT_TRUE(info.ok()) << info.status();
      EXPECT_TRUE(info->spec.pipeline == pipeline);
      EXPECT_EQ(info->spec.repeated_augmentations, 2u);
      ASSERT_TRUE(client->DeleteJob(job->id).ok());
      one = JobBytes(daemon, spec);
    }
    {
      TestDaemon daemon({.workers = 4});
      four = JobBytes(daemon, spec);
    }
    EXPECT_GT(one.size(), 0u);
    EXPECT_TRUE(one == four) << "1 and 4 workers disagree";
  }
}

TEST_F(AugmentTest, ResumeAfterATrainerRestartIsByteIdentical) {
  TestDaemon daemon;
  const std::string full = JobBytes(daemon, Train(3));  // 2 epochs x 5
  Position position;
  std::string bytes = ConsumeThenStop(daemon, Train(3), 6, &position);
  // The 7th batch was in flight, not released: the position points at it.
  EXPECT_EQ(position, (Position{1, 1}));
  JobSpec resumed = Train(3);
  resumed.start = position;
  bytes += JobBytes(daemon, resumed);
  EXPECT_TRUE(bytes == full) << "the resumed run differs";
}

TEST_F(AugmentTest, ResumeAfterADaemonRestartIsByteIdentical) {
  std::string full, bytes;
  Position position;
  {
    TestDaemon daemon;
    full = JobBytes(daemon, Train(5));
    bytes = ConsumeThenStop(daemon, Train(5), 3, &position);
  }  // the daemon stops; its rings are gone
  EXPECT_EQ(position, (Position{0, 3}));
  TestDaemon restarted({.workers = 3});
  JobSpec resumed = Train(5);
  resumed.start = position;
  bytes += JobBytes(restarted, resumed);
  EXPECT_TRUE(bytes == full) << "the resumed run differs";
}

TEST(Position, TextFormRoundTripsAndRefusesGarbage) {
  const Position p{12, 34567};
  EXPECT_EQ(SerializePosition(p), "stoker-position:12:34567");
  EXPECT_EQ(*ParsePosition(SerializePosition(p)), p);
  for (const char* bad :
       {"", "stoker-position:", "stoker-position:1", "stoker-position:a:1",
        "position:1:2", "stoker-position:1:2x"}) {
    EXPECT_EQ(ParsePosition(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST_F(AugmentTest, AnotherSeedGivesOtherCropsAndOrder) {
  TestDaemon daemon;
  EXPECT_NE(JobBytes(daemon, Train(3)), JobBytes(daemon, Train(4)));
}

TEST_F(AugmentTest, ColorJitterChangesPixelsButNotTheSampleOrder) {
  TestDaemon daemon;
  JobSpec jittered = Train(3);
  JobSpec plain = jittered;
  plain.pipeline.pop_back();
  const std::string a = JobBytes(daemon, plain);
  const std::string b = JobBytes(daemon, jittered);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_NE(a, b);
  // Labels and indices (the tail of each batch) are the same: the jitter
  // draws from its own stream.
  const size_t image_bytes = 5 * 48 * 48 * 3;
  EXPECT_EQ(a.substr(image_bytes, 5 * 16), b.substr(image_bytes, 5 * 16));
}

TEST_F(AugmentTest, FloatOutputIsTheNormalisedUint8Output) {
  TestDaemon daemon;
  const Normalize norm;
  JobSpec base = Train(9);
  base.epochs = 1;
  const std::string u8 = JobBytes(daemon, base);
  JobSpec f32 = base;
  f32.pipeline.push_back(norm);
  f32.dtype = DType::kFloat32;
  const std::string f = JobBytes(daemon, f32);
  JobSpec f16 = f32;
  f16.dtype = DType::kFloat16;
  f16.layout = Layout::kNHWC;
  const std::string h = JobBytes(daemon, f16);
  const size_t hw = 48 * 48, per_image = hw * 3, images = 21;
  const size_t batch_tail = 5 * 16;  // labels + indices of a full batch
  ASSERT_EQ(f.size(), u8.size() + 3 * images * per_image);
  ASSERT_EQ(h.size(), u8.size() + images * per_image);
  size_t u_off = 0, f_off = 0, h_off = 0;
  for (size_t image = 0; image < images; ++image) {
    for (size_t i = 0; i < hw; ++i) {
      for (int c = 0; c < 3; ++c) {
        const uint8_t v = u8[u_off + i * 3 + c];  // NHWC
        const float want = (v / 255.0f - norm.mean[c]) / norm.std[c];
        float got;
        std::memcpy(&got, &f[f_off + (c * hw + i) * 4], 4);  // NCHW
        ASSERT_EQ(got, want) << "image " << image << " pixel " << i;
        uint16_t half;
        std::memcpy(&half, &h[h_off + (i * 3 + c) * 2], 2);  // NHWC
        ASSERT_NEAR(HalfToFloat(half), want,
                    2e-3 * std::max(1.0f, std::fabs(want)));
      }
    }
    u_off += per_image;
    f_off += per_image * 4;
    h_off += per_image * 2;
    if (image % 5 == 4 || image + 1 == images) {  // end of a batch
      const size_t tail = image % 5 == 4 ? batch_tail : 16 * (image % 5 + 1);
      u_off += tail;
      f_off += tail;
      h_off += tail;
    }
  }
}

TEST_F(AugmentTest, FlipMirrorsTheImageExactly) {
  TestDaemon daemon;
  JobSpec plain{.dataset_path = dir_.path() + "/data",
                .batch_size = 7,
                .slots = 2,
                .pipeline = {Resize{.height = 30, .width = 40}},
                .shuffle = false,
                .epochs = 1};
  JobSpec flipped = plain;
  flipped.pipeline.push_back(RandomHorizontalFlip{.p = 1.0f});
  const std::string a = JobBytes(daemon, plain);
  const std::string b = JobBytes(daemon, flipped);
  ASSERT_EQ(a.size(), b.size());
  const size_t batch_bytes = 7 * (30 * 40 * 3) + 7 * 16;
  for (size_t batch = 0; batch < 3; ++batch) {
    for (size_t row = 0; row < 7 * 30; ++row) {  // every image row of the batch
      const char* ra = &a[batch * batch_bytes + row * 40 * 3];
      const char* rb = &b[batch * batch_bytes + row * 40 * 3];
      for (int x = 0; x < 40; ++x) {
        ASSERT_EQ(0, std::memcmp(ra + x * 3, rb + (39 - x) * 3, 3))
            << "batch " << batch << " row " << row << " x " << x;
      }
    }
  }
}

TEST_F(AugmentTest, EvaluationPipelineMatchesAnIndependentReference) {
  testdata::TempDir dir("stoker-eval");
  const auto data = MakeDataset(dir.path() + "/data", 2, 3, 160, 120,
                                /*vary_size=*/true, /*smooth=*/true);
  TestDaemon daemon;
  auto client = daemon.Connect();
  auto job = client->CreateJob({.dataset_path = dir.path() + "/data",
                                .batch_size = 6,
                                .slots = 2,
                                .pipeline = EvalPipeline(64, 48),
                                .shuffle = false,
                                .epochs = 1});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec.height, 48u);
  auto consumer = client->Attach(job->id);
  auto batch = (*consumer)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (uint32_t row = 0; row < 6; ++row) {
    // torchvision: Resize(64) keeps the aspect with the shorter side 64,
    // then CenterCrop(48) takes the middle.
    const auto source = testing::ReferenceDecode(data.paths[row]);
    const int rw = source.width <= source.height
                       ? 64
                       : int(int64_t(64) * source.width / source.height);
    const int rh = source.width <= source.height
                       ? int(int64_t(64) * source.height / source.width)
                       : 64;
    const auto resized = testing::ReferenceResize(source, rw, rh);
    const int top = int(std::nearbyint((rh - 48) / 2.0));
    const int left = int(std::nearbyint((rw - 48) / 2.0));
    std::vector<uint8_t> expected;
    for (int y = 0; y < 48; ++y) {
      const uint8_t* line = &resized.pixels[((top + y) * rw + left) * 3];
      expected.insert(expected.end(), line, line + 48 * 3);
    }
    const uint8_t* got = batch->images().data() + row * 48 * 48 * 3;
    EXPECT_LT(testing::MeanAbsDiff(got, expected.data(), expected.size()), 3.0)
        << data.paths[row];
  }
}

}  // namespace
}  // namespace stoker
