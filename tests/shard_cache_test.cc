// ShardCache on a real directory: entries kept whole and found again (also
// after the cache is reopened, as after a restart), the size bound kept by
// evicting the least recently used unheld entries, held entries never
// evicted, a failed or cut fetch leaving nothing behind, one fetch shared
// by jobs asking at once, and one stokerd per directory. Plus the remote
// shard names and the URLs they are fetched from.
#include "daemon/remote/shard_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "daemon/jobs/stream_order.h"
#include "daemon/remote/remote_url.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kUser = 1000;

class ShardCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stoker-shard-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = std::string(pattern) + "/cache";
  }
  void TearDown() override { fs::remove_all(fs::path(dir_).parent_path()); }

  // A fill writing `size` bytes of `byte`, counting its calls.
  ShardCache::Fill Bytes(uint64_t size, char byte) {
    return [this, size, byte](int fd) {
      ++fills_;
      const std::string data(size, byte);
      return ::pwrite(fd, data.data(), data.size(), 0) == ssize_t(size)
                 ? absl::OkStatus()
                 : absl::InternalError("write");
    };
  }
  static char FirstByte(const ShardCache::Entry& entry) {
    char byte = 0;
    EXPECT_EQ(::pread(entry.fd(), &byte, 1, 0), 1);
    return byte;
  }
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      names.push_back(e.path().filename());
    }
    return names;
  }

  std::string dir_;
  std::atomic<int> fills_{0};
};

TEST_F(ShardCacheTest, KeepsShardsWholeAndFindsThemAfterAReopen) {
  {
    auto cache = ShardCache::Open(dir_, 1000, 1000);
    ASSERT_TRUE(cache.ok()) << cache.status();
    bool hit = true;
    auto a = (*cache)->Get("url-a\nv1", 100, kUser, Bytes(100, 'a'), {}, &hit);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_FALSE(hit);
    EXPECT_EQ(FirstByte(**a), 'a');
    auto again =
        (*cache)->Get("url-a\nv1", 100, kUser, Bytes(100, 'x'), {}, &hit);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(hit);
    EXPECT_EQ(FirstByte(**again), 'a');
    EXPECT_EQ(fills_.load(), 1);
    // Another version of the same URL is another entry.
    auto v2 = (*cache)->Get("url-a\nv2", 100, kUser, Bytes(100, 'b'), {}, &hit);
    ASSERT_TRUE(v2.ok());
    EXPECT_FALSE(hit);
    EXPECT_EQ(FirstByte(**v2), 'b');
    struct stat st;
    ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
  }
  auto cache = ShardCache::Open(dir_, 1000, 1000);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->usage().files, 2u);
  EXPECT_EQ((*cache)->usage().bytes, 200u);
  bool hit = false;
  auto a = (*cache)->Get("url-a\nv1", 100, kUser, Bytes(100, 'x'), {}, &hit);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(FirstByte(**a), 'a');
  for (const std::string& name : Files()) {
    struct stat st;
    ASSERT_EQ(::stat((dir_ + "/" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
}

TEST_F(ShardCacheTest, EvictsTheLeastRecentlyUsedUnheldShards) {
  auto cache = ShardCache::Open(dir_, 300, 300);
  ASSERT_TRUE(cache.ok());
  bool hit = false;
  auto held = (*cache)->Get("held", 100, kUser, Bytes(100, 'h'), {}, &hit);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE((*cache)->Get("old", 100, kUser, Bytes(100, 'o'), {}, &hit).ok());
  ASSERT_TRUE((*cache)->Get("new", 100, kUser, Bytes(100, 'n'), {}, &hit).ok());
  ASSERT_TRUE((*cache)->Get("new", 100, kUser, Bytes(100, 'n'), {}, &hit).ok());
  // Full: "old" goes (least recently used and unheld), not "held".
  ASSERT_TRUE(
      (*cache)->Get("more", 100, kUser, Bytes(100, 'm'), {}, &hit).ok());
  EXPECT_EQ((*cache)->usage().evictions, 1u);
  ASSERT_TRUE(
      (*cache)->Get("held", 100, kUser, Bytes(100, 'x'), {}, &hit).ok());
  EXPECT_TRUE(hit);
  ASSERT_TRUE((*cache)->Get("old", 100, kUser, Bytes(100, 'o'), {}, &hit).ok());
  EXPECT_FALSE(hit);
  // Held shards are never evicted: what does not fit beside them is refused.
  std::vector<std::shared_ptr<const ShardCache::Entry>> all;
  for (const char* key : {"held", "old", "new"}) {
    auto entry = (*cache)->Get(key, 100, kUser, Bytes(100, 'x'), {}, &hit);
    ASSERT_TRUE(entry.ok()) << key << entry.status();
    all.push_back(*entry);
  }
  auto refused =
      (*cache)->Get("another", 100, kUser, Bytes(100, 'x'), {}, &hit);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*cache)
                ->Get("huge", 301, kUser, Bytes(301, 'x'), {}, &hit)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
}

// Two streamed jobs reading the same 16 shards, each in its own shard
// order (StreamOrder, other seeds) for three epochs at the same pace,
// through a cache of 6 shards: the fetches with least-recently-used
// eviction and with eviction by the jobs' known future use.
class TraceUse : public ShardCache::FutureUse {
 public:
  uint64_t NextUse(const std::string& identity) const override {
    const uint32_t shard = std::stoul(identity.substr(4));  // "url-N"
    uint64_t next = UINT64_MAX;
    for (size_t j = 0; j < traces.size(); ++j) {
      for (size_t p = at; p < traces[j].size(); ++p) {
        if (traces[j][p] == shard) {
          next = std::min<uint64_t>(next, p - at);
          break;
        }
      }
    }
    return next;
  }
  std::vector<std::vector<uint32_t>> traces;
  size_t at = 0;
};

// The fetches of the two jobs' reads through a new cache at `dir`.
int SimulateTwoJobs(const std::string& dir, bool future) {
  constexpr uint64_t kShard = 1000;
  auto cache = ShardCache::Open(dir, 6 * kShard, 6 * kShard);
  EXPECT_TRUE(cache.ok()) << cache.status();
  TraceUse use;
  auto counts = std::make_shared<std::vector<uint32_t>>(16, 10);
  for (uint64_t seed : {1, 2}) {
    use.traces.emplace_back();
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      for (const ShardRun& run :
           StreamOrder(counts, seed, epoch, {}, 1, true).runs()) {
        use.traces.back().push_back(run.shard);
      }
    }
  }
  if (future) (*cache)->AddFutureUse(&use);
  std::vector<std::shared_ptr<const ShardCache::Entry>> held(2);
  int fetched = 0;
  for (use.at = 0; use.at < use.traces[0].size(); ++use.at) {
    for (size_t j = 0; j < 2; ++j) {
      held[j].reset();  // done with the last shard
      bool hit = false;
      auto entry = (*cache)->Get(
          absl::StrCat("url-", use.traces[j][use.at], "\nv1"), kShard, kUser,
          [&](int fd) {
            ++fetched;
            const std::string data(kShard, 'x');
            return ::pwrite(fd, data.data(), kShard, 0) == ssize_t(kShard)
                       ? absl::OkStatus()
                       : absl::InternalError("write");
          },
          {}, &hit);
      EXPECT_TRUE(entry.ok()) << entry.status();
      held[j] = *std::move(entry);
    }
  }
  held.clear();
  if (future) (*cache)->RemoveFutureUse(&use);
  return fetched;
}

TEST_F(ShardCacheTest, EvictingByKnownFutureUseFetchesLessThanLru) {
  const int lru = SimulateTwoJobs(dir_ + "-lru", false);
  const int future = SimulateTwoJobs(dir_ + "-future", true);
  // 96 reads of 16 shards; printed for docs/remote.md.
  std::printf("fetches: LRU %d, future use %d of 96 reads\n", lru, future);
  EXPECT_GE(lru, 16);
  EXPECT_GE(future, 16);  // each shard once at least
  EXPECT_LT(future * 10, lru * 8) << lru << " " << future;
}

TEST_F(ShardCacheTest, AFailedFetchLeavesNothingAndACrashedOneIsRemoved) {
  auto cache = ShardCache::Open(dir_, 1000, 1000);
  ASSERT_TRUE(cache.ok());
  bool hit = false;
  auto failed = (*cache)->Get(
      "cut", 100, kUser,
      [](int fd) {
        (void)::pwrite(fd, "partial", 7, 0);
        return absl::UnavailableError("connection cut");
      },
      {}, &hit);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Files(), std::vector<std::string>{"lock"});
  EXPECT_EQ((*cache)->usage().bytes, 0u);
  cache->reset();
  // What a killed stokerd leaves mid-fetch, and a shard without its key.
  ASSERT_TRUE(std::system(("echo x > " + dir_ + "/.partial-0123 && echo y > " +
                           dir_ + "/abcd.tar")
                              .c_str()) == 0);
  cache = ShardCache::Open(dir_, 1000, 1000);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(Files(), std::vector<std::string>{"lock"});
}

TEST_F(ShardCacheTest, JobsAskingAtOnceShareOneFetch) {
  auto cache = ShardCache::Open(dir_, 1000, 1000);
  ASSERT_TRUE(cache.ok());
  absl::Notification release;
  std::vector<std::thread> jobs;
  std::atomic<int> hits{0};
  for (int i = 0; i < 4; ++i) {
    jobs.emplace_back([&] {
      bool hit = false;
      auto entry = (*cache)->Get(
          "shared", 100, kUser,
          [&](int fd) {
            ++fills_;
            release.WaitForNotification();
            return ::pwrite(fd, std::string(100, 's').data(), 100, 0) == 100
                       ? absl::OkStatus()
                       : absl::InternalError("write");
          },
          {}, &hit);
      ASSERT_TRUE(entry.ok());
      EXPECT_EQ(FirstByte(**entry), 's');
      hits += hit;
    });
  }
  absl::SleepFor(absl::Milliseconds(100));
  release.Notify();
  for (std::thread& job : jobs) job.join();
  EXPECT_EQ(fills_.load(), 1);
  EXPECT_EQ(hits.load(), 3);
}

TEST_F(ShardCacheTest, AWaitingJobGivesUpAndOneUserTakesAtMostItsShare) {
  auto cache = ShardCache::Open(dir_, 1000, 400);
  ASSERT_TRUE(cache.ok());
  absl::Notification started, release;
  std::thread fetcher([&] {
    bool hit = false;
    auto entry = (*cache)->Get(
        "slow", 100, kUser,
        [&](int fd) {
          started.Notify();
          release.WaitForNotification();
          return ::pwrite(fd, std::string(100, 's').data(), 100, 0) == 100
                     ? absl::OkStatus()
                     : absl::InternalError("write");
        },
        {}, &hit);
    EXPECT_TRUE(entry.ok());
  });
  started.WaitForNotification();
  // A job waiting on another's fetch stops when its own deadline says so.
  bool hit = false;
  const absl::Time give_up_at = absl::Now() + absl::Milliseconds(300);
  auto waited = (*cache)->Get(
      "slow", 100, kUser + 1, Bytes(100, 'x'),
      [&] { return absl::Now() > give_up_at; }, &hit);
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kCancelled);
  release.Notify();
  fetcher.join();
  // One user holds at most 400 of the 1000 bytes; another still has room.
  std::vector<std::shared_ptr<const ShardCache::Entry>> held;
  for (const char* key : {"a", "b", "c", "d"}) {
    auto entry = (*cache)->Get(key, 100, kUser, Bytes(100, 'x'), {}, &hit);
    ASSERT_TRUE(entry.ok()) << key << entry.status();
    held.push_back(*entry);
  }
  auto over = (*cache)->Get("e", 100, kUser, Bytes(100, 'x'), {}, &hit);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("--cache_size_per_user"),
            std::string::npos);
  EXPECT_TRUE(
      (*cache)->Get("e", 100, kUser + 1, Bytes(100, 'x'), {}, &hit).ok());
  // Released, the user's share is free again.
  held.clear();
  EXPECT_TRUE((*cache)->Get("e", 100, kUser, Bytes(100, 'x'), {}, &hit).ok());
}

TEST_F(ShardCacheTest, ARefusedShardEvictsNothing) {
  auto cache = ShardCache::Open(dir_, 300, 300);
  ASSERT_TRUE(cache.ok());
  bool hit = false;
  auto held = (*cache)->Get("held", 200, kUser, Bytes(200, 'h'), {}, &hit);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(
      (*cache)->Get("idle", 100, kUser, Bytes(100, 'i'), {}, &hit).ok());
  // 150 more cannot fit beside the 200 held, so "idle" stays.
  auto big = (*cache)->Get("big", 150, kUser + 1, Bytes(150, 'b'), {}, &hit);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*cache)->usage().evictions, 0u);
  ASSERT_TRUE(
      (*cache)->Get("idle", 100, kUser, Bytes(100, 'x'), {}, &hit).ok());
  EXPECT_TRUE(hit);
}

TEST_F(ShardCacheTest, OneStokerdPerDirectory) {
  auto first = ShardCache::Open(dir_, 1000, 1000);
  ASSERT_TRUE(first.ok());
  auto second = ShardCache::Open(dir_, 1000, 1000);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos);
}

TEST(RemoteUrlTest, NamesAndTheirFetchUrls) {
  EXPECT_TRUE(IsRemoteShard("s3://b/k.tar"));
  EXPECT_TRUE(IsRemoteShard("HTTPS://h/p.tar"));
  EXPECT_FALSE(IsRemoteShard("/data/s3://x"));
  EXPECT_TRUE(CheckRemoteName("f", "s3://b/train-{0..9}.tar").ok());
  for (const char* bad :
       {"s3://", "s3://bucket", "s3://bucket/", "https://u:p@h/x.tar",
        "https://h/x.tar?sig=1", "https://h/x.tar#f", "https://h/a b.tar",
        "http://h/"}) {
    EXPECT_EQ(CheckRemoteName("f", bad).code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  FetchAccess access;
  EXPECT_EQ(*FetchUrlOf("s3://bkt/a/b c+d.tar", access),
            "https://bkt.s3.us-east-1.amazonaws.com/a/b%20c%2Bd.tar");
  access.region = "eu-west-3";
  access.path_style = true;
  EXPECT_EQ(*FetchUrlOf("s3://bkt/k.tar", access),
            "https://s3.eu-west-3.amazonaws.com/bkt/k.tar");
  access.endpoint_url = "http://127.0.0.1:9000/";
  EXPECT_EQ(*FetchUrlOf("s3://bkt/k.tar", access),
            "http://127.0.0.1:9000/bkt/k.tar");
  EXPECT_EQ(*FetchUrlOf("https://h:8443/x/y.tar", access),
            "https://h:8443/x/y.tar");
  EXPECT_TRUE(CheckFetchAccess(access).ok());
  FetchAccess bad = access;
  bad.session_token = "token\r\nX-Injected: 1";
  EXPECT_EQ(CheckFetchAccess(bad).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckFetchAccess(bad).message().find("token\r"), std::string::npos);
  bad = access;
  bad.region = "us-east-1:iam";
  EXPECT_EQ(CheckFetchAccess(bad).code(), absl::StatusCode::kInvalidArgument);
  access.endpoint_url = "http://127.0.0.1:9000/prefix";
  EXPECT_EQ(FetchUrlOf("s3://bkt/k.tar", access).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
