// Dataset sources: the source a job's dataset gets (by kind and URL
// scheme), and remote shards indexed through the shard cache from an
// in-memory store: the same index as the local shards, one fetch per
// shard for all jobs, a probe with each job's own access before every
// cached copy, a shard replaced while fetched fetched again, and the
// cache's bound.
#include "daemon/datasets/dataset_source.h"

#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "bench/support/process.h"
#include "gtest/gtest.h"
#include "tests/fake_object_store.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using Members = std::vector<std::pair<std::string, std::string>>;
using testing::FakeStore;

constexpr uid_t kUser = 1000;

class RemoteSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int s = 0; s < 3; ++s) {
      Members members;
      for (int i = 0; i < 4; ++i) {
        const std::string key = absl::StrCat("s", s, "_", i);
        members.push_back({key + ".jpg", std::string(100 + 10 * i, 'a' + s)});
        members.push_back({key + ".cls", absl::StrCat(s * 4 + i)});
      }
      local_.push_back(
          testing::WriteTarShard(dir_.path(), absl::StrCat(s), members));
      const std::vector<uint8_t> bytes = testing::FileBytes(local_.back());
      store_.Put(Name(s), std::string(bytes.begin(), bytes.end()));
    }
  }

  static std::string Name(int s) {
    return absl::StrCat("s3://bucket/train/", s, ".tar");
  }
  std::unique_ptr<ShardCache> OpenCache(uint64_t max_bytes) {
    auto cache = ShardCache::Open(dir_.path() + "/cache", max_bytes, max_bytes);
    EXPECT_TRUE(cache.ok()) << cache.status();
    return cache.ok() ? *std::move(cache) : nullptr;
  }
  absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexRemote(
      ShardCache* cache, ObjectStore* store) {
    RemoteShardSource remote{.cache = cache, .store = store, .user = kUser};
    auto source =
        MakeDatasetSource({.kind = DatasetKind::kTarShards,
                           .shards = {"s3://bucket/train/{0..2}.tar"}},
                          &remote);
    EXPECT_FALSE(source->ReadsAsOwner());
    DatasetCache unused;
    return source->Index(limits_, &unused);
  }

  testdata::TempDir dir_;
  std::vector<std::string> local_;
  FakeStore store_;
  ScanLimits limits_;
};

TEST_F(RemoteSourceTest, IndexesAsTheLocalShardsAre) {
  auto cache = OpenCache(1 << 20);
  auto remote = IndexRemote(cache.get(), &store_);
  ASSERT_TRUE(remote.ok()) << remote.status();
  auto local = MakeDatasetSource(
                   {.kind = DatasetKind::kTarShards, .shards = local_}, nullptr)
                   ->Index(limits_, std::make_unique<DatasetCache>().get());
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ((*remote)->size(), 12u);
  ASSERT_EQ((*remote)->size(), (*local)->size());
  EXPECT_TRUE((*remote)->held());
  EXPECT_EQ((*remote)->shards()[1], Name(1));
  for (uint32_t i = 0; i < 12; ++i) {
    EXPECT_EQ((*remote)->label(i), (*local)->label(i));
    EXPECT_EQ((*remote)->label(i), i);
    const MemberRange at = (*remote)->Value(i, 0).range;
    EXPECT_EQ(at.shard, i / 4);
    std::string bytes(at.size, '\0');
    ASSERT_EQ(::pread((*remote)->held_shard(at.shard).fd, bytes.data(), at.size,
                      at.offset),
              ssize_t(at.size));
    EXPECT_EQ(bytes, std::string(100 + 10 * (i % 4), 'a' + i / 4)) << i;
  }
  EXPECT_EQ(store_.gets(), 3u);
  EXPECT_EQ(store_.probes(), 3u);
}

TEST_F(RemoteSourceTest, LaterJobsProbeWithTheirOwnAccessButFetchNothing) {
  auto cache = OpenCache(1 << 20);
  ASSERT_TRUE(IndexRemote(cache.get(), &store_).ok());
  auto again = IndexRemote(cache.get(), &store_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(store_.gets(), 3u);    // fetched once
  EXPECT_EQ(store_.probes(), 6u);  // checked for each job
  EXPECT_EQ(cache->usage().hits, 3u);
  // Another user's store that may not read shard 2: the cached copy is
  // not theirs to read.
  FakeStore intruder;
  for (int s = 0; s < 3; ++s) {
    const std::vector<uint8_t> bytes = testing::FileBytes(local_[s]);
    intruder.Put(Name(s), std::string(bytes.begin(), bytes.end()));
  }
  intruder.Deny(Name(2));
  auto denied = IndexRemote(cache.get(), &intruder);
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.status().message().find(Name(2)), std::string::npos);
}

TEST_F(RemoteSourceTest, AShardReplacedWhileFetchedIsFetchedAgainWhole) {
  auto cache = OpenCache(1 << 20);
  const std::vector<uint8_t> shard0 = testing::FileBytes(local_[0]);
  bool replaced = false;
  store_.OnGet([&](const std::string& name) {
    if (name == Name(1) && !replaced) {
      replaced = true;
      store_.Put(Name(1), std::string(shard0.begin(), shard0.end()));
    }
  });
  auto index = IndexRemote(cache.get(), &store_);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE(replaced);
  EXPECT_EQ(store_.gets(), 4u);  // shard 1 twice
  // Shard 1 is now shard 0's bytes: its samples are shard 0's.
  EXPECT_EQ((*index)->label(4), 0);
  EXPECT_EQ((*index)->label(7), 3);
}

TEST_F(RemoteSourceTest, ShardsThatDoNotFitTheCacheAreRefusedByName) {
  auto cache = OpenCache(testing::FileBytes(local_[0]).size() + 10);
  auto index = IndexRemote(cache.get(), &store_);
  EXPECT_EQ(index.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(index.status().message().find("s3://bucket/train/"),
            std::string::npos)
      << index.status();
}

TEST_F(RemoteSourceTest, NoCacheOrNoStoreIsAFailedPrecondition) {
  EXPECT_EQ(IndexRemote(nullptr, &store_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  auto cache = OpenCache(1 << 20);
  EXPECT_EQ(IndexRemote(cache.get(), nullptr).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(DatasetSource, IsChosenByKindAndScheme) {
  const auto reads_as_owner = [](DatasetRef ref) {
    return MakeDatasetSource(std::move(ref), nullptr)->ReadsAsOwner();
  };
  EXPECT_TRUE(
      reads_as_owner({.kind = DatasetKind::kImageFolder, .path = "/d"}));
  EXPECT_TRUE(reads_as_owner({.kind = DatasetKind::kManifest, .path = "/m"}));
  for (const char* local : {"/data/{0..3}.tar", "relative/s3:/x.tar"}) {
    EXPECT_TRUE(
        reads_as_owner({.kind = DatasetKind::kTarShards, .shards = {local}}))
        << local;
  }
  for (const char* remote : {"s3://b/k.tar", "HTTPS://h/p.tar", "http://h/x"}) {
    const DatasetRef ref{.kind = DatasetKind::kTarShards, .shards = {remote}};
    EXPECT_TRUE(NamesRemoteShards(ref)) << remote;
    EXPECT_FALSE(reads_as_owner(ref)) << remote;
  }
  EXPECT_EQ(DatasetName({.kind = DatasetKind::kTarShards,
                         .shards = {"s3://b/{0..9}.tar", "s3://b/x.tar"}}),
            "shards s3://b/{0..9}.tar and 1 more patterns");
  EXPECT_EQ(DatasetName({.kind = DatasetKind::kManifest, .path = "/m.csv"}),
            "manifest /m.csv");
}

TEST(DatasetSource, LocalIndexesAreSharedRemoteOnesAreNot) {
  testdata::TempDir dir;
  const std::string shard =
      testing::WriteTarShard(dir.path(), "0", {{"a.jpg", "x"}, {"a.cls", "1"}});
  DatasetCache shared;
  ScanLimits limits;
  const DatasetRef ref{.kind = DatasetKind::kTarShards, .shards = {shard}};
  auto first = MakeDatasetSource(ref, nullptr)->Index(limits, &shared);
  auto second = MakeDatasetSource(ref, nullptr)->Index(limits, &shared);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(shared.usage().indexes, 1u);
}

}  // namespace
}  // namespace stoker
