#include "daemon/datasets/webdataset.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/support/process.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

using Members = std::vector<std::pair<std::string, std::string>>;

// A shard with these members in this order, written by Python's tarfile
// (as webdataset's TarWriter writes shards).
std::string WriteShard(const testdata::TempDir& dir, const std::string& name,
                       const Members& members) {
  const std::string script = dir.path() + "/" + name + ".py";
  const std::string path = dir.path() + "/" + name + ".tar";
  std::ofstream py(script);
  py << "import io, tarfile\n"
     << "t = tarfile.open('" << path << "', 'w')\n";
  for (const auto& [member, content] : members) {
    py << "data = bytes.fromhex('";
    for (unsigned char c : content) {
      static const char* kHex = "0123456789abcdef";
      py << kHex[c >> 4] << kHex[c & 15];
    }
    py << "')\ninfo = tarfile.TarInfo('" << member << "')\n"
       << "info.size = len(data)\n"
       << "t.addfile(info, io.BytesIO(data))\n";
  }
  py << "t.close()\n";
  py.close();
  EXPECT_EQ(std::system(("python3 " + script).c_str()), 0);
  return path;
}

absl::StatusOr<std::vector<ShardSample>> Group(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  auto members = ReadTarMembers(fd, path);
  EXPECT_TRUE(members.ok()) << members.status();
  auto samples = GroupShardSamples(fd, path, *members);
  ::close(fd);
  return samples;
}

std::string BytesAt(const std::string& path, const ShardSample& s) {
  std::string out(s.size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(s.offset));
  in.read(out.data(), static_cast<std::streamsize>(s.size));
  return out;
}

TEST(GroupShardSamples, ConsecutiveMembersOfAKeyAreASample) {
  testdata::TempDir dir("stoker-wds");
  const std::string path = WriteShard(dir, "good",
                                      {{"000000.jpg", "image zero"},
                                       {"000000.cls", "3"},
                                       {"000001.cls", " 7\n"},
                                       {"000001.JPEG", "image one"},
                                       {"a.b/000002.seg.png", "a mask"},
                                       {"a.b/000002.jpg", "image two"},
                                       {"a.b/000002.cls", "-1"},
                                       {"a.b/000002.json", "{}"}});
  auto samples = Group(path);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  EXPECT_EQ((*samples)[0].key, "000000");
  EXPECT_EQ((*samples)[0].label, 3);
  EXPECT_EQ(BytesAt(path, (*samples)[0]), "image zero");
  EXPECT_EQ((*samples)[1].key, "000001");
  EXPECT_EQ((*samples)[1].label, 7);
  EXPECT_EQ(BytesAt(path, (*samples)[1]), "image one");
  // The key ends at the first dot after the last slash; of two images the
  // jpg is taken.
  EXPECT_EQ((*samples)[2].key, "a.b/000002");
  EXPECT_EQ((*samples)[2].label, -1);
  EXPECT_EQ(BytesAt(path, (*samples)[2]), "image two");
}

TEST(GroupShardSamples, ASampleWithoutImageOrLabelIsNamed) {
  testdata::TempDir dir("stoker-wds");
  struct Case {
    Members members;
    std::string why;
  };
  const Case cases[] = {
      {{{"k1.jpg", "x"}, {"k1.cls", "1"}, {"k2.cls", "2"}},
       "sample 'k2' has no image"},
      {{{"k1.jpg", "x"}, {"k2.jpg", "y"}, {"k2.cls", "2"}},
       "sample 'k1' has no cls member"},
      {{{"k1.jpg", "x"}, {"k1.cls", "cat"}}, "not an integer: 'cat'"},
      {{{"k1.jpg", "x"}, {"k1.cls", std::string(65, '1')}}, "over 64 bytes"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.why);
    const std::string path =
        WriteShard(dir, "bad" + std::to_string(n++), c.members);
    auto samples = Group(path);
    ASSERT_FALSE(samples.ok());
    EXPECT_EQ(samples.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(samples.status().message().find(c.why), std::string::npos)
        << samples.status();
    EXPECT_NE(samples.status().message().find(path), std::string::npos);
  }
}

}  // namespace
}  // namespace stoker
