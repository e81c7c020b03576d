// Named fields through a real daemon (in this process), its shared memory,
// the C++ SDK (Batch::fields, Batch::field) and the C ABI
// (stoker_batch_field): img2dataset-like shards of JPEGs, captions and
// JSON; and what the daemon refuses, by name.
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "stoker/stoker_c.h"
#include "tests/test_util.h"

namespace stoker::testing {
namespace {

class FieldsTest : public ::testing::Test {
 protected:
  // Twelve samples, keys 000000000...: a JPEG, a caption (not for sample
  // 5), a JSON object and a class; shard `name`.tar.
  std::string WriteShard(const std::string& name) {
    const auto folder = MakeDataset(daemon_.dir() + "/photos", 1, 12, 48, 40);
    std::vector<std::pair<std::string, std::string>> members;
    for (int i = 0; i < 12; ++i) {
      char prefix[16];
      std::snprintf(prefix, sizeof(prefix), "%09d", i);
      const std::vector<uint8_t> jpeg = FileBytes(folder.paths[i]);
      const std::string key = prefix;
      members.emplace_back(key + ".jpg", std::string(jpeg.begin(), jpeg.end()));
      if (i != 5) members.emplace_back(key + ".txt", Caption(i));
      members.emplace_back(key + ".json", Json(i));
      members.emplace_back(key + ".cls", std::to_string(i % 4));
    }
    return WriteTarShard(daemon_.dir(), name, members);
  }
  static std::string Caption(int i) {
    return "caption " + std::to_string(i) + " caf\xc3\xa9";
  }
  static std::string Json(int i) {
    return "{\"n\": " + std::to_string(i) + ", \"tags\": [" +
           std::string(size_t(i) * 3, ' ') + "]}";
  }
  JobSpec Spec(const std::string& shard) {
    return {.shards = {shard},
            .batch_size = 4,
            .slots = 3,
            .height = 32,
            .width = 40,
            .shuffle = false,
            .fields = {SampleFieldOf("jpg;png"), SampleFieldOf("txt"),
                       SampleFieldOf("json")},
            .missing = MissingField::kSkip};
  }

  TestDaemon daemon_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
};

TEST_F(FieldsTest, TheSdkReadsEveryFieldOfEverySample) {
  const std::string shard = WriteShard("pairs");
  auto job = client_->CreateJob(Spec(shard));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->num_samples, 11u);
  EXPECT_EQ(job->samples_skipped, 1u);
  ASSERT_EQ(job->spec.fields.size(), 3u);
  EXPECT_EQ(job->spec.fields[0].kind, FieldKind::kImage);  // chosen by it
  EXPECT_EQ(job->spec.fields[1].kind, FieldKind::kBytes);
  EXPECT_EQ(job->spec.max_field_bytes, 64u << 10);
  // The same shard as a classic job: the same images, sample for sample.
  JobSpec classic = Spec(shard);
  classic.fields.clear();
  classic.missing = MissingField::kError;
  auto images = client_->CreateJob(classic);
  ASSERT_TRUE(images.ok()) << images.status();
  auto consumer = client_->Attach(job->id);
  auto reference = client_->Attach(images->id);
  ASSERT_TRUE(consumer.ok() && reference.ok());
  std::vector<std::vector<uint8_t>> classic_images;
  for (int b = 0; b < 3; ++b) {
    absl::StatusOr<Batch> batch = (*reference)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->fields().size(), 2u);  // images, labels
    EXPECT_EQ(batch->fields()[1].kind, Batch::Field::Kind::kInt64);
    EXPECT_EQ(batch->field("labels")->int64s.data(), batch->labels().data());
    const size_t per = batch->images().bytes() / batch->size();
    for (uint32_t i = 0; i < batch->size(); ++i) {
      const uint8_t* row = batch->images().data() + i * per;
      classic_images.emplace_back(row, row + per);
    }
  }
  size_t seen = 0;
  for (int b = 0; b < 3; ++b) {
    absl::StatusOr<Batch> batch = (*consumer)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    ASSERT_EQ(batch->fields().size(), 3u);
    EXPECT_TRUE(batch->labels().empty());
    const Batch::Field* caption = batch->field("txt");
    const Batch::Field* meta = batch->field("json");
    ASSERT_NE(caption, nullptr);
    ASSERT_NE(meta, nullptr);
    EXPECT_EQ(batch->field("cls"), nullptr);
    EXPECT_EQ(caption->kind, Batch::Field::Kind::kBytes);
    // The ring holds the largest value, not max_field_bytes.
    EXPECT_EQ(meta->row_stride, Json(11).size());
    const size_t per = batch->images().bytes() / batch->size();
    for (uint32_t i = 0; i < batch->size(); ++i, ++seen) {
      const int n = int(seen < 5 ? seen : seen + 1);  // sample 5 left out
      EXPECT_EQ(batch->indices()[i], int64_t(seen));
      EXPECT_EQ(caption->value(i), Caption(n));
      EXPECT_EQ(meta->value(i), Json(n));
      const uint8_t* row = batch->images().data() + i * per;
      EXPECT_EQ(std::vector<uint8_t>(row, row + per), classic_images[n]);
    }
    EXPECT_TRUE(batch->CheckIntact().ok());
  }
  EXPECT_EQ(seen, 11u);
}

TEST_F(FieldsTest, TheCAbiNamesEachFieldAndItsValues) {
  const std::string shard = WriteShard("pairs");
  stoker_client* client = nullptr;
  ASSERT_EQ(stoker_connect(daemon_.target().c_str(), 5000, &client),
            STOKER_STATUS_OK);
  const std::string spec =
      R"({"dataset": {"shards": [")" + shard +
      R"("]}, "batch_size": 4, "slots": 2, "epochs": 1, "shuffle": false,
          "output": {"height": 32, "width": 40},
          "fields": [{"name": "image", "source": ["jpg"]},
                     {"name": "caption", "source": ["txt"]}],
          "missing": "MISSING_FIELD_SKIP"})";
  char* job = nullptr;
  ASSERT_EQ(stoker_create_job(client, spec.c_str(), &job), STOKER_STATUS_OK)
      << stoker_last_error();
  const std::string json = job;
  stoker_free(job);
  const size_t at = json.find("\"id\":\"");
  const std::string id = json.substr(at + 6, json.find('"', at + 6) - at - 6);
  stoker_consumer_options options{};
  options.struct_size = sizeof(options);
  stoker_consumer* consumer = nullptr;
  ASSERT_EQ(stoker_attach(client, id.c_str(), &options, &consumer),
            STOKER_STATUS_OK);
  stoker_batch_info info{};
  info.struct_size = sizeof(info);
  stoker_batch* batch = nullptr;
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &info), STOKER_STATUS_OK)
      << stoker_last_error();
  EXPECT_EQ(info.field_count, 2u);
  EXPECT_EQ(info.labels, nullptr);
  stoker_field_info image{};
  image.struct_size = sizeof(image);
  ASSERT_EQ(stoker_batch_field(batch, 0, &image), STOKER_STATUS_OK);
  EXPECT_STREQ(image.name, "image");
  EXPECT_EQ(image.kind, STOKER_FIELD_IMAGE);
  EXPECT_EQ(image.rank, 4);
  EXPECT_EQ(image.data, info.images);
  EXPECT_EQ(image.bytes, info.image_bytes);
  stoker_field_info caption{};
  caption.struct_size = sizeof(caption);
  ASSERT_EQ(stoker_batch_field(batch, 1, &caption), STOKER_STATUS_OK);
  EXPECT_STREQ(caption.name, "caption");
  EXPECT_EQ(caption.kind, STOKER_FIELD_BYTES);
  EXPECT_EQ(caption.dtype, STOKER_DTYPE_UINT8);
  EXPECT_EQ(caption.shape[0], 4);
  EXPECT_EQ(uint64_t(caption.shape[1]), caption.row_stride);
  for (int i = 0; i < 4; ++i) {
    const char* row =
        static_cast<const char*>(caption.data) + i * caption.row_stride;
    EXPECT_EQ(std::string(row, size_t(caption.lengths[i])), Caption(i));
  }
  stoker_batch_release(batch);
  // A caller built for ABI 2 (no field_count) would read labels: refused.
  stoker_batch_info v2{};
  v2.struct_size = offsetof(stoker_batch_info, field_count);
  EXPECT_EQ(stoker_next(consumer, 10000, &batch, &v2),
            STOKER_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(std::string(stoker_last_error()).find("stoker_batch_field"),
            std::string::npos);
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &info), STOKER_STATUS_OK);
  stoker_field_info past{};
  past.struct_size = sizeof(past);
  EXPECT_EQ(stoker_batch_field(batch, 2, &past),
            STOKER_STATUS_INVALID_ARGUMENT);
  past.struct_size = 8;
  EXPECT_EQ(stoker_batch_field(batch, 0, &past),
            STOKER_STATUS_INVALID_ARGUMENT);
  stoker_batch_release(batch);
  stoker_consumer_close(consumer);
  EXPECT_EQ(stoker_delete_job(client, id.c_str()), STOKER_STATUS_OK);
  stoker_client_close(client);
}

TEST_F(FieldsTest, WhatTheContractCannotCarryIsRefusedByName) {
  const std::string shard = WriteShard("pairs");
  const auto refused = [&](JobSpec spec, const std::string& why) {
    auto job = client_->CreateJob(spec);
    EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument) << why;
    EXPECT_NE(job.status().message().find(why), std::string::npos)
        << job.status();
  };
  JobSpec folder = Spec(shard);
  folder.shards.clear();
  folder.dataset_path = daemon_.dir() + "/photos";
  refused(folder, "fields apply to tar shards and manifests");
  JobSpec reserved = Spec(shard);
  reserved.fields[1].name = "indices";
  refused(reserved, "fields[1] name 'indices' is the batch's own");
  JobSpec twice = Spec(shard);
  twice.fields[2].name = "txt";
  refused(twice, "fields[2] name 'txt' names another field too");
  JobSpec many = Spec(shard);
  for (int i = 0; i < 14; ++i)
    many.fields.push_back(SampleFieldOf("x" + std::to_string(i)));
  refused(many, "fields holds 17 fields, at most 16");
  JobSpec slash = Spec(shard);
  slash.fields[1].source = {"a/txt"};
  refused(slash, "without '/' (a member suffix)");
  JobSpec two_images = Spec(shard);
  two_images.fields[1] = SampleFieldOf("png");
  refused(two_images, "a second image per sample is not supported yet");
  JobSpec no_image = Spec(shard);
  no_image.fields.erase(no_image.fields.begin());
  refused(no_image, "has 0; add the image's suffixes");
  JobSpec mixed = Spec(shard);
  mixed.fields[1] = SampleFieldOf("txt;png");
  refused(mixed, "mixes image suffixes and others");
  JobSpec bound = Spec(shard);
  bound.max_field_bytes = 1 << 20;
  refused(bound,
          "max_field_bytes 1048576 is more than stokerd takes (its "
          "max_field_bytes setting, 65536)");
  JobSpec upper = Spec(shard);
  upper.fields[1] = SampleFieldOf("TXT");
  refused(upper, "fields[1] source 'TXT' has upper-case letters");
  JobSpec labelled = Spec(shard);
  labelled.label_field = "n";
  refused(labelled, "dataset.label_field applies to a classic job");
}

}  // namespace
}  // namespace stoker::testing
