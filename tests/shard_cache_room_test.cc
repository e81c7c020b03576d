// ShardCache, what streamed windows ask of it: a Get past the user's share
// waits (until its deadline) for the user's own entries to go instead of
// failing at once, and an entry fetched as not durable serves this run but
// is not found after a reopen (no key written, the file removed).
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "daemon/remote/shard_cache.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kUser = 1000;

ShardCache::Fill Bytes(uint64_t size, char byte) {
  return [size, byte](int fd) {
    const std::string data(size, byte);
    return ::pwrite(fd, data.data(), data.size(), 0) == ssize_t(size)
               ? absl::OkStatus()
               : absl::InternalError("write");
  };
}

class ShardCacheRoomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/stoker-shard-cache-room-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = std::string(pattern) + "/cache";
  }
  void TearDown() override { fs::remove_all(fs::path(dir_).parent_path()); }
  std::string dir_;
};

TEST_F(ShardCacheRoomTest, AGetPastTheUsersShareWaitsForItsEntriesToGo) {
  auto cache = ShardCache::Open(dir_, 1000, 200);
  ASSERT_TRUE(cache.ok());
  bool hit = false;
  auto a = (*cache)->Get("a", 100, kUser, Bytes(100, 'a'), {}, &hit);
  auto b = (*cache)->Get("b", 100, kUser, Bytes(100, 'b'), {}, &hit);
  ASSERT_TRUE(a.ok() && b.ok());
  // Without a wait: refused at once.
  EXPECT_EQ(
      (*cache)->Get("c", 100, kUser, Bytes(100, 'c'), {}, &hit).status().code(),
      absl::StatusCode::kResourceExhausted);
  // With one: refused at its deadline while the user holds on ...
  const absl::Time start = absl::Now();
  auto late =
      (*cache)->Get("c", 100, kUser, Bytes(100, 'c'), {}, &hit,
                    {.room_until = absl::Now() + absl::Milliseconds(300)});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  // ... and given the entry once one of the user's entries goes.
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(200));
    a->reset();
  });
  auto c = (*cache)->Get("c", 100, kUser, Bytes(100, 'c'), {}, &hit,
                         {.room_until = absl::Now() + absl::Seconds(30)});
  release.join();
  EXPECT_TRUE(c.ok()) << c.status();
}

TEST_F(ShardCacheRoomTest, AnEntryThatIsNotDurableIsNotKeptAcrossAReopen) {
  {
    auto cache = ShardCache::Open(dir_, 1000, 1000);
    ASSERT_TRUE(cache.ok());
    bool hit = true;
    auto window = (*cache)->Get("window", 100, kUser, Bytes(100, 'w'), {}, &hit,
                                {.durable = false});
    ASSERT_TRUE(window.ok()) << window.status();
    EXPECT_FALSE(hit);
    auto kept = (*cache)->Get("kept", 100, kUser, Bytes(100, 'k'), {}, &hit);
    ASSERT_TRUE(kept.ok());
    // This run finds it like any other.
    auto again = (*cache)->Get("window", 100, kUser, Bytes(100, 'x'), {}, &hit,
                               {.durable = false});
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(hit);
  }
  auto cache = ShardCache::Open(dir_, 1000, 1000);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->usage().files, 1u);
  EXPECT_EQ((*cache)->usage().bytes, 100u);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    files += e.path().extension() == ".tar";
  }
  EXPECT_EQ(files, 1u);  // the window's file removed
  bool hit = true;
  ASSERT_TRUE(
      (*cache)->Get("window", 100, kUser, Bytes(100, 'w'), {}, &hit).ok());
  EXPECT_FALSE(hit);
}

}  // namespace
}  // namespace stoker
