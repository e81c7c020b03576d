#include "daemon/datasets/tar_members.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "bench/support/process.h"
#include "common/unique_fd.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

// Files with their contents, written under `dir`/in, and an archive of
// them made by GNU tar in `format` (plus any extra tar flags).
class Archive {
 public:
  Archive(const testdata::TempDir& dir, const std::string& format,
          const std::map<std::string, std::string>& files,
          const std::string& extra = "")
      : path_(dir.path() + "/shard-" + format + ".tar") {
    const std::string in = dir.path() + "/in-" + format;
    for (const auto& [name, content] : files) {
      std::filesystem::create_directories(
          std::filesystem::path(in + "/" + name).parent_path());
      std::ofstream(in + "/" + name, std::ios::binary) << content;
    }
    // GNU tar, or Python's tarfile (what WebDataset's TarWriter uses).
    const std::string command =
        format.starts_with("python-")
            ? "cd " + in +
                  " && python3 -c 'import sys, tarfile; "
                  "t = tarfile.open(sys.argv[1], \"w\", format=getattr("
                  "tarfile, sys.argv[2])); t.add(\".\"); t.close()' " +
                  path_ + " " + format.substr(7) + " 2>&1"
            : "tar --format=" + format + " " + extra + " -cf " + path_ +
                  " -C " + in + " . 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

absl::StatusOr<std::vector<TarMember>> Read(const std::string& path,
                                            const TarLimits& limits = {}) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_TRUE(fd) << path;
  return ReadTarMembers(fd.get(), path, limits);
}

std::string BytesAt(const std::string& path, const TarMember& m) {
  std::string out(m.size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(m.offset));
  in.read(out.data(), static_cast<std::streamsize>(m.size));
  return out;
}

const std::string kLong =  // 150 characters: beyond the 100-byte name field
    "a-directory-with-a-rather-long-name/another-one-to-push-it-past/"
    "and-a-third-so-that-no-name-field-can-hold-it/sample-000001";

std::map<std::string, std::string> Files() {
  return {{"000000.jpg", std::string(1000, 'j')},
          {"000000.cls", "3\n"},
          {"000001.jpg", std::string(513, 'k')},
          {"empty.json", ""},
          {kLong + ".jpg", std::string(70000, 'l')}};
}

// Every regular file is listed once, with the offset and size where tar put
// its bytes, whichever way the long name was written.
TEST(ReadTarMembers, ListsEveryFileWhereItsBytesAreInEachFormat) {
  testdata::TempDir dir("stoker-tar");
  for (const std::string format :
       {"gnu", "pax", "ustar", "python-PAX_FORMAT", "python-GNU_FORMAT"}) {
    SCOPED_TRACE(format);
    const Archive archive(dir, format, Files());
    auto members = Read(archive.path());
    ASSERT_TRUE(members.ok()) << members.status();
    std::map<std::string, std::string> seen;
    for (const TarMember& m : *members) {
      EXPECT_EQ(m.offset % 512, 0u);
      seen[m.name] = BytesAt(archive.path(), m);
    }
    std::map<std::string, std::string> want;
    for (const auto& [name, content] : Files()) want["./" + name] = content;
    EXPECT_EQ(seen, want);  // directories are not members
  }
}

TEST(ReadTarMembers, BadShardsAreRefusedNamingTheShardAndTheHeader) {
  testdata::TempDir dir("stoker-tar");
  const Archive archive(dir, "gnu", Files());
  std::string bytes;
  {
    std::ifstream in(archive.path(), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& name, const std::string& content) {
    const std::string path = dir.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  };
  auto expect = [&](const std::string& path, const std::string& why,
                    const TarLimits& limits = {}) {
    auto members = Read(path, limits);
    ASSERT_FALSE(members.ok()) << why;
    EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(members.status().message().find(why), std::string::npos)
        << members.status();
    EXPECT_NE(members.status().message().find(path), std::string::npos)
        << members.status();
  };
  std::string header = bytes;
  header[20] ^= 0x40;  // the first header's name
  expect(write("checksum.tar", header), "bad header checksum");
  expect(write("truncated.tar", bytes.substr(0, 1536 + 700)), "truncated");
  expect(write("noise.tar", std::string(4096, 'x')), "bad header checksum");
  expect(archive.path(), "above the limit", {.max_member_bytes = 60000});
  expect(archive.path(), "more than 3 members", {.max_members = 3});
  // The names a listing holds are bounded too (a shard of huge pax names).
  expect(archive.path(), "member names pass 100 bytes",
         {.max_name_bytes = 100});
  // A member name past PATH_MAX (a 5,005-byte pax path).
  const std::string long_name = dir.path() + "/long_name.tar";
  ASSERT_EQ(std::system(("python3 -c \"import io, tarfile; t = tarfile.open('" +
                         long_name +
                         "', 'w', format=tarfile.PAX_FORMAT); i = "
                         "tarfile.TarInfo('d/' * 2500 + 'x.jpg'); i.size = 1; "
                         "t.addfile(i, io.BytesIO(b'x')); t.close()\"")
                            .c_str()),
            0);
  expect(long_name, "a member name of 5005 bytes, longer than 4095 ('d/d/");
  const std::string gz = dir.path() + "/shard.tar.gz";
  ASSERT_EQ(std::system(("gzip -c " + archive.path() + " > " + gz).c_str()), 0);
  expect(gz, "gzip-compressed tar");
}

}  // namespace
}  // namespace stoker
