// The shard-level index of a streamed dataset: index files and sizes.json
// parsed (relative names, errors naming the line), the table's memory at
// LAION-2B's scale, and the counts loaded from an in-memory store in their
// order (index file, sizes.json, this user's kept scan, a scan), a scan
// counting each shard's samples as the full index does.
#include "daemon/datasets/shard_table.h"

#include <fcntl.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/support/process.h"
#include "daemon/datasets/shard_counts.h"
#include "gtest/gtest.h"
#include "tests/fake_object_store.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testing::FakeStore;

TEST(ShardIndexFile, ParsesRelativeAndFullNames) {
  const std::string text =
      absl::StrCat(kShardIndexHeader, "\n0.tar\t10\t4096\t\"etag0\"\r\n",
                   "s3://other/1.tar\t0\t512\t-\n\n");
  auto parsed = ParseShardIndex(text, "s3://b/train/stoker-index.tsv");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  const ShardInfo& zero = parsed->at("s3://b/train/0.tar");
  EXPECT_EQ(zero.samples, 10u);
  EXPECT_EQ(zero.size, 4096u);
  EXPECT_EQ(zero.version, "\"etag0\"");
  EXPECT_EQ(parsed->at("s3://other/1.tar").version, "");
  EXPECT_EQ(ShardIndexLine("0.tar", zero), "0.tar\t10\t4096\t\"etag0\"");
}

TEST(ShardIndexFile, RefusalsNameTheLine) {
  const auto refused = [](const std::string& text) {
    auto parsed = ParseShardIndex(text, "/d/stoker-index.tsv");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(parsed.status().message());
  };
  const std::string head = absl::StrCat(kShardIndexHeader, "\n");
  EXPECT_NE(refused("0.tar\t1\t2\t-\n").find("line 1"), std::string::npos);
  EXPECT_NE(refused(head + "0.tar\t1\t2\n").find("line 2"), std::string::npos);
  EXPECT_NE(refused(head + "0.tar\tx\t2\t-\n").find("not a number"),
            std::string::npos);
  EXPECT_NE(refused(head + "0.tar\t4294967296\t2\t-\n").find("2^32"),
            std::string::npos);
  EXPECT_NE(refused(head + "0.tar\t1\t2\t-\n0.tar\t1\t2\t-\n").find("again"),
            std::string::npos);
  EXPECT_NE(refused("").find("line 1"), std::string::npos);
}

TEST(SizesJson, ParsesOpenClipsCounts) {
  auto parsed = ParseSizesJson(R"({"00000.tar": 10000, "00001.tar": 9998})",
                               "https://h/laion/sizes.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->at("https://h/laion/00001.tar").samples, 9998u);
  EXPECT_EQ(parsed->at("https://h/laion/00000.tar").size, 0u);
  for (const char* bad : {"[1, 2]", R"({"a.tar": -1})", R"({"a.tar": "9"})",
                          R"({"a.tar": 4294967296})", "{"}) {
    EXPECT_EQ(ParseSizesJson(bad, "sizes.json").status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(ShardTable, TwoHundredThousandShardsOfTwoBillionSamplesFitTheBudget) {
  ShardTable::Builder builder;
  for (int s = 0; s < 200000; ++s) {
    ASSERT_TRUE(builder
                    .Add(absl::StrFormat("s3://laion2b/shards/%06d.tar", s),
                         {.samples = 10000,
                          .size = uint64_t{500} << 20,
                          .version = absl::StrFormat("\"%032x\"", s)})
                    .ok());
  }
  auto table = builder.Build();
  EXPECT_EQ(table->samples(), 2000000000u);
  EXPECT_EQ(table->name(123456), "s3://laion2b/shards/123456.tar");
  EXPECT_EQ(table->version(7), absl::StrFormat("\"%032x\"", 7));
  EXPECT_EQ(table->counts()->size(), 200000u);
  EXPECT_LT(table->MemoryBytes(), uint64_t{64} << 20);
  EXPECT_GT(table->MemoryBytes(), uint64_t{200000} * 60);  // names counted
}

class ShardCountsTest : public ::testing::Test {
 protected:
  // Shard s of directory d holds 3 + s samples.
  void SetUp() override {
    for (const char* d : {"a", "b"}) {
      for (int s = 0; s < 3; ++s) {
        std::vector<std::pair<std::string, std::string>> members;
        for (int i = 0; i < 3 + s; ++i) {
          members.push_back({absl::StrCat("k", i, ".jpg"), "x"});
          members.push_back({absl::StrCat("k", i, ".cls"), "1"});
        }
        const auto bytes = testing::FileBytes(
            testing::WriteTarShard(dir_.path(), absl::StrCat(d, s), members));
        names_.push_back(absl::StrCat("s3://bucket/", d, "/", s, ".tar"));
        store_.Put(names_.back(), std::string(bytes.begin(), bytes.end()));
      }
    }
    source_ = {.store = &store_,
               .counts_dir = dir_.path() + "/counts",
               .user = 1000,
               .scratch_dir = dir_.path()};
  }

  testdata::TempDir dir_;
  std::vector<std::string> names_;
  FakeStore store_;
  ShardCountsSource source_;
};

TEST_F(ShardCountsTest, IndexFileThenSizesJsonThenAScanKeptForNextTime) {
  store_.Put("s3://bucket/a/stoker-index.tsv",
             absl::StrCat(kShardIndexHeader, "\n0.tar\t3\t1\t-\n",
                          "s3://bucket/a/1.tar\t4\t1\t-\n"));
  store_.Put("s3://bucket/a/sizes.json", R"({"2.tar": 5, "1.tar": 99})");
  CountsTally tally;
  auto table = LoadShardTable(names_, source_, &tally);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(tally.index_file, 2u);
  EXPECT_EQ(tally.sizes_json, 1u);  // the index file's 4 wins over 99
  EXPECT_EQ(tally.scanned, 3u);     // directory b
  ASSERT_EQ((*table)->shards(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ((*table)->samples(i), 3 + i % 3) << i;
    EXPECT_EQ((*table)->name(i), names_[i]);
  }
  EXPECT_EQ((*table)->samples(), 24u);
  EXPECT_FALSE((*table)->version(3).empty());  // a scan's probe
  EXPECT_EQ(store_.gets(), 2u + 3u);  // a's two lists, b's three shards
  // The next job of this user: b's counts kept, nothing scanned.
  CountsTally again;
  ASSERT_TRUE(LoadShardTable(names_, source_, &again).ok());
  EXPECT_EQ(again.kept, 3u);
  EXPECT_EQ(again.scanned, 0u);
  // Another user's job scans for itself: counts of shards it may not read
  // are not shown to it.
  source_.user = 1001;
  store_.Deny("s3://bucket/b/1.tar");
  CountsTally other;
  auto denied = LoadShardTable(names_, source_, &other);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(other.kept, 0u);
}

TEST_F(ShardCountsTest, ABadListIsNamed) {
  store_.Put("s3://bucket/b/sizes.json", R"({"0.tar": "three"})");
  CountsTally tally;
  auto table = LoadShardTable(names_, source_, &tally);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find("s3://bucket/b/sizes.json"),
            std::string::npos)
      << table.status();
}

TEST_F(ShardCountsTest, AScanCountsAsTheFullIndexDoes) {
  // Members without a dot and a key split over two runs.
  const auto bytes =
      testing::FileBytes(testing::WriteTarShard(dir_.path(), "odd",
                                                {{"README", "x"},
                                                 {"a.jpg", "x"},
                                                 {"a.cls", "1"},
                                                 {"b.jpg", "x"},
                                                 {"a.json", "{}"}}));
  store_.Put("s3://bucket/c/odd.tar", std::string(bytes.begin(), bytes.end()));
  auto info =
      CountRemoteShard(store_, "s3://bucket/c/odd.tar", {}, dir_.path());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->samples, 3u);  // a, b, a again: as group_by_keys forms them
  EXPECT_EQ(info->size, bytes.size());
}

}  // namespace
}  // namespace stoker
