#include "daemon/datasets/webdataset.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/support/process.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using Members = std::vector<std::pair<std::string, std::string>>;

std::string WriteShard(const testdata::TempDir& dir, const std::string& name,
                       const Members& members) {
  return testing::WriteTarShard(dir.path(), name, members);
}

absl::StatusOr<std::vector<ShardSample>> Group(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd) << path;
  auto members = ReadTarMembers(fd.get(), path);
  EXPECT_TRUE(members.ok()) << members.status();
  return GroupShardSamples(fd.get(), path, *members);
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

// Member names split as webdataset's own expression splits them: each
// name's (key, suffix), or none, from Python's re beside SplitMemberName's.
TEST(SplitMemberName, SplitsAsWebdatasetsBasePlusExt) {
  testdata::TempDir dir("stoker-wds");
  const std::vector<std::string> names = {"000000001.jpg",
                                          "000000001.JPG",
                                          "dir/k.seg.png",
                                          "a.b/c.jpg",
                                          "a.b/c",
                                          "README",
                                          "k.",
                                          ".hidden",
                                          "x/.hidden.jpg",
                                          "a/x/.h.jpg",
                                          "a/b.c/.h",
                                          "a.b/c/.h",
                                          "/.h",
                                          "x/.",
                                          "k.tar.gz",
                                          "d/e/f.TXT"};
  const std::string script = dir.path() + "/split.py";
  std::ofstream py(script);
  py << "import json, re, sys\n"
     << "r = re.compile(r'^((?:.*/|)[^.]+)[.]([^/]*)$')\n"
     << "for name in sys.stdin.read().split('\\n'):\n"
     << "    m = r.match(name)\n"
     << "    print(json.dumps([m.group(1), m.group(2).lower()] if m else "
        "None))\n";
  py.close();
  std::string input;
  for (size_t i = 0; i < names.size(); ++i) {
    input += (i ? "\n" : "") + names[i];
  }
  std::ofstream(dir.path() + "/names") << input;
  const std::string out = dir.path() + "/split.out";
  ASSERT_EQ(
      std::system(("python3 " + script + " < " + dir.path() + "/names > " + out)
                      .c_str()),
      0);
  std::ifstream lines(out);
  for (const std::string& name : names) {
    std::string want;
    ASSERT_TRUE(std::getline(lines, want)) << name;
    const std::optional<KeySuffix> got = SplitMemberName(name);
    const std::string mine =
        got ? "[\"" + got->key + "\", \"" + got->suffix + "\"]" : "null";
    EXPECT_EQ(mine, want) << name;
  }
}

std::vector<TarMember> MembersOf(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd) << path;
  auto members = ReadTarMembers(fd.get(), path);
  EXPECT_TRUE(members.ok()) << members.status();
  return members.ok() ? *members : std::vector<TarMember>{};
}

TEST(GroupFieldSamples, TakesTheFirstSuffixPresentOfEachField) {
  testdata::TempDir dir("stoker-wds");
  const std::string path = WriteShard(dir, "fields",
                                      {{"000000000.png", "png zero"},
                                       {"000000000.jpg", "jpg zero"},
                                       {"000000000.txt", "caption zero"},
                                       {"000000001.seg.png", "not a png"},
                                       {"000000001.txt", "caption one"},
                                       {"000000002.PNG", "png two"},
                                       {"000000002.json", "{}"},
                                       {"NOTES", "in no sample"},
                                       {"000000003.webp", "webp three"},
                                       {"000000003.txt", "caption three"}});
  const std::vector<std::vector<std::string>> fields = {{"jpg", "png", "webp"},
                                                        {"txt"}};
  const std::vector<TarMember> members = MembersOf(path);
  uint64_t skipped = 0;
  auto kept = GroupFieldSamples(path, members, fields, false, &skipped);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 4u);
  EXPECT_EQ(skipped, 0u);
  const auto bytes = [&](const std::optional<MemberRange>& m) {
    return m ? BytesAt(path, {"", m->offset, m->size, 0}) : "(none)";
  };
  EXPECT_EQ(bytes((*kept)[0].members[0]), "jpg zero");  // jpg before png
  EXPECT_EQ(bytes((*kept)[0].members[1]), "caption zero");
  EXPECT_EQ(bytes((*kept)[1].members[0]), "(none)");   // seg.png is not png
  EXPECT_EQ(bytes((*kept)[2].members[0]), "png two");  // suffixes lower-cased
  EXPECT_EQ(bytes((*kept)[2].members[1]), "(none)");
  EXPECT_EQ(bytes((*kept)[3].members[0]), "webp three");
  auto complete = GroupFieldSamples(path, members, fields, true, &skipped);
  ASSERT_TRUE(complete.ok()) << complete.status();
  ASSERT_EQ(complete->size(), 2u);
  EXPECT_EQ(skipped, 2u);
  EXPECT_EQ(bytes((*complete)[1].members[1]), "caption three");
}

TEST(GroupFieldSamples, TwoMembersOfOneSuffixAreRefusedNamingTheSample) {
  testdata::TempDir dir("stoker-wds");
  const std::string path = WriteShard(
      dir, "twice", {{"k1.jpg", "x"}, {"k1.txt", "a"}, {"k1.TXT", "b"}});
  uint64_t skipped = 0;
  auto samples =
      GroupFieldSamples(path, MembersOf(path), {{"jpg"}}, false, &skipped);
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(samples.status().message().find(
                "sample 'k1' has two members with the suffix 'txt'"),
            std::string::npos)
      << samples.status();
}

}  // namespace
}  // namespace stoker
