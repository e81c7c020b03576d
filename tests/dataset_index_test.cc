// The pieces under every dataset source: brace patterns, manifest rows, the
// compact index and the cache that shares it, on real files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bench/support/process.h"
#include "common/unique_fd.h"
#include "daemon/datasets/brace_expand.h"
#include "daemon/datasets/dataset_cache.h"
#include "daemon/datasets/image_folder.h"
#include "daemon/datasets/manifest.h"
#include "daemon/datasets/manifest_lines.h"
#include "daemon/datasets/manifest_rows.h"
#include "daemon/os/file_identity.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

std::vector<std::string> Expand(const std::string& pattern, size_t max = 1000) {
  std::vector<std::string> out;
  absl::Status ok = ExpandBraces(pattern, max, &out);
  EXPECT_TRUE(ok.ok()) << ok;
  return out;
}

// The cases follow braceexpand's own documentation and tests.
TEST(ExpandBraces, RangesListsPaddingAndNestingAsBraceexpand) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Expand("t-{000..002}.tar"),
            (V{"t-000.tar", "t-001.tar", "t-002.tar"}));
  EXPECT_EQ(Expand("{9..11}"), (V{"9", "10", "11"}));
  EXPECT_EQ(Expand("{3..1}"), (V{"3", "2", "1"}));
  EXPECT_EQ(Expand("{0..10..5}"), (V{"0", "5", "10"}));
  EXPECT_EQ(Expand("{a,b}/{1..2}"), (V{"a/1", "a/2", "b/1", "b/2"}));
  EXPECT_EQ(Expand("{a,{b,c}d}"), (V{"a", "bd", "cd"}));
  EXPECT_EQ(Expand("{x}.tar"), (V{"{x}.tar"}));
  EXPECT_EQ(Expand("x{.tar"), (V{"x{.tar"}));
  EXPECT_EQ(Expand("{-01..1}"), (V{"-01", "000", "001"}));
  EXPECT_EQ(Expand("plain.tar"), (V{"plain.tar"}));
}

TEST(ExpandBraces, TooManyPathsIsAnErrorNamingThePattern) {
  std::vector<std::string> out;
  absl::Status many = ExpandBraces("s-{0..99999999999}.tar", 1000, &out);
  EXPECT_EQ(many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(many.message().find("s-{0..99999999999}.tar"), std::string::npos);
  out.clear();
  EXPECT_FALSE(ExpandBraces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", 32, &out).ok());
  // Long paths are bounded by their bytes too: 1000 x 4 KiB.
  out.clear();
  absl::Status bytes = ExpandBraces(std::string(4000, 'x') + "{000..999}",
                                    1 << 20, &out, 1 << 20);
  EXPECT_NE(bytes.message().find("bytes of paths"), std::string::npos) << bytes;
}

std::vector<ManifestRow> Rows(absl::string_view text, bool csv,
                              absl::Status* status) {
  std::vector<ManifestRow> rows;
  const RowSink sink = [&rows](const ManifestRow& row) {
    rows.push_back(row);
    return absl::OkStatus();
  };
  *status = csv ? ParseCsvManifest(text, "m", sink)
                : ParseJsonLinesManifest(text, "m", sink);
  return rows;
}

// Each text is refused with INVALID_ARGUMENT whose message holds "manifest
// 'm' " and then its reason.
void ExpectRefused(
    bool csv, const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [text, why] : cases) {
    absl::Status status;
    Rows(text, csv, &status);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find("manifest 'm' " + why), std::string::npos)
        << status;
  }
}

TEST(ManifestRows, CsvQuotingColumnsAndLineNumbers) {
  absl::Status status;
  auto rows = Rows(
      "\xEF\xBB\xBFid,label,path,class\r\n"
      "1, 3 ,\"a, b.jpg\",cat\r\n"
      "\n"
      "2,4,\"say \"\"hi\"\"\nnext.jpg\",dog\n"
      "3,-1,plain.jpg,\n",
      true, &status);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].path, "a, b.jpg");
  EXPECT_EQ(rows[0].label, 3);
  EXPECT_EQ(rows[0].class_name, "cat");
  EXPECT_EQ(rows[0].line, 2u);
  EXPECT_EQ(rows[1].path, "say \"hi\"\nnext.jpg");
  EXPECT_EQ(rows[1].line, 4u);
  EXPECT_EQ(rows[2].line, 6u);  // the quoted line break counts
  EXPECT_EQ(rows[2].label, -1);
  ExpectRefused(true, {{"path,label\nx.jpg,1.5\n", "line 2: the label '1.5'"},
                       {"path,label\nx.jpg\n", "line 2: has 1 fields"},
                       {"path\nx.jpg\n", "line 1: the header row"},
                       {"path,label\n\"x.jpg\"y,1\n", "line 2: text follows"},
                       {"", "line 1: no header row"}});
}

TEST(ManifestRows, JsonLinesFieldsAndErrors) {
  absl::Status status;
  auto rows = Rows(
      "{\"path\": \"a.jpg\", \"label\": 2, \"class\": \"x\", \"more\": [1]}\n"
      "   \n"
      "{\"label\": 5, \"path\": \"b.jpg\"}\r\n",
      false, &status);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].class_name, "x");
  EXPECT_EQ(rows[1].path, "b.jpg");
  EXPECT_EQ(rows[1].line, 3u);
  EXPECT_FALSE(rows[1].class_name.has_value());
  ExpectRefused(false,
                {{"{\"path\": \"a\", \"label\": \"2\"}", "line 1: the label"},
                 {"{\"path\": 3, \"label\": 2}", "line 1: has no \"path\""},
                 {"\n[1, 2]", "line 2: is not a JSON object"},
                 {"{\"path\": \"a\"}", "line 1: has no \"label\""}});
}

TEST(ManifestRows, LongRowsPathsAndClassNamesAreRefusedNamingTheLine) {
  const std::string long_path(5000, 'p');
  const std::string wide(70000, 'x');
  const std::string half(40000, 'h');
  ExpectRefused(
      true,
      {{"path,label\na.jpg,0\n" + long_path + ",1\n", "line 3: the path 'ppp"},
       {"path,label,class\na.jpg,0," + std::string(2000, 'c') + "\n",
        "line 2: the class name 'ccc"},
       {"path,label\na.jpg,0\n" + wide + ",1\n",
        "line 3: longer than 65536 bytes"},
       {"path,label\n\"" + half + "\n" + half + "\",1\n",
        "line 2: the row is longer than 65536 bytes"}});
  std::string array = "{\"path\": \"a\", \"label\": 0, \"x\": [1";
  while (array.size() < 70000) array += ",1";
  ExpectRefused(false, {{"{\"path\": \"" + long_path + "\", \"label\": 0}\n",
                         "line 1: the path"},
                        {"{\"path\": \"a\", \"label\": 0}\n" + array + "]}\n",
                         "line 2: longer than 65536 bytes"}});
}

// A manifest file read a piece (1 MiB) at a time gives the lines of its
// text, CRLF ends, a last line without an end and all.
TEST(ManifestLines, AFileReadInPiecesGivesTheLinesOfItsText) {
  testdata::TempDir dir("stoker-lines");
  std::string text;
  for (int i = 0; text.size() < (size_t{3} << 20); ++i) {
    text += std::string(i * 7 % 997, char('a' + i % 26));
    text += i % 5 == 0 ? "\r\n" : "\n";
  }
  text += "the last line, without an end";
  const std::string path = dir.path() + "/m.csv";
  std::ofstream(path, std::ios::binary) << text;
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_GE(fd.get(), 0);
  auto file = LinesOfFile(fd.get(), "m");
  auto memory = LinesOfText(text, "m");
  absl::string_view a, b;
  uint64_t lines = 0;
  for (;;) {
    auto more_a = file->Next(&a);
    auto more_b = memory->Next(&b);
    ASSERT_TRUE(more_a.ok() && more_b.ok());
    ASSERT_EQ(*more_a, *more_b) << "line " << lines;
    if (!*more_a) break;
    ASSERT_EQ(a, b) << "line " << file->line();
    ASSERT_EQ(file->line(), ++lines);
  }
  EXPECT_EQ(b, "the last line, without an end");
  EXPECT_GT(lines, 6000u);

  const std::string wide = dir.path() + "/wide.csv";
  std::ofstream(wide, std::ios::binary) << "path,label\n"
                                        << std::string(3 << 20, 'w') << "\n";
  const UniqueFd wide_fd(::open(wide.c_str(), O_RDONLY | O_CLOEXEC));
  auto lines_of_wide = LinesOfFile(wide_fd.get(), "wide");
  ASSERT_TRUE(*lines_of_wide->Next(&a));
  auto refused = lines_of_wide->Next(&a);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("'wide' line 2: longer than"),
            std::string::npos)
      << refused.status();
}

void Write(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(IndexManifest, ResolvesRowsChecksFilesAndKeepsClassNames) {
  testdata::TempDir dir("stoker-manifest");
  const std::string root = dir.path();
  Write(root + "/img/a.jpg", "x");
  Write(root + "/img/sub/b.jpg", "x");
  Write(root + "/lists/train.csv",
        "path,label,class\n../img/a.jpg,1,bee\n" + root +
            "/img/sub/./b.jpg,0,ant\n../img/a.jpg,1,bee\n");
  auto index = IndexManifest(root + "/lists/train.csv", {});
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ((*index)->size(), 3u);
  EXPECT_EQ((*index)->Path(0), root + "/img/a.jpg");
  EXPECT_EQ((*index)->Path(1), root + "/img/sub/b.jpg");
  EXPECT_EQ((*index)->label(2), 1);
  EXPECT_EQ((*index)->class_names(), (std::vector<std::string>{"ant", "bee"}));
  Write(root + "/lists/clash.csv",
        "path,label,class\n../img/a.jpg,1,bee\n"
        "../img/a.jpg,1,wasp\n");
  auto clash = IndexManifest(root + "/lists/clash.csv", {});
  EXPECT_NE(clash.status().message().find("line 3: names label 1 'wasp'"),
            std::string::npos)
      << clash.status();
  Write(root + "/lists/dir.csv", "path,label\n../img/sub,1\n");
  EXPECT_NE(IndexManifest(root + "/lists/dir.csv", {})
                .status()
                .message()
                .find("line 2: '../img/sub' is a directory"),
            std::string::npos);
}

// ImageNet-like names: "n01440764/n01440764_10026.JPEG".
TEST(DatasetIndex, FileSamplesCostTwelveBytesPlusTheirName) {
  DatasetIndex::Builder builder(DatasetKind::kImageFolder);
  constexpr int kClasses = 100, kPerClass = 1000;
  uint64_t name_bytes = 0;
  for (int c = 0; c < kClasses; ++c) {
    const std::string dir =
        "/data/imagenet/train/n0" + std::to_string(1440764 + c);
    for (int i = 0; i < kPerClass; ++i) {
      const std::string name = "n0" + std::to_string(1440764 + c) + "_" +
                               std::to_string(10000 + i) + ".JPEG";
      name_bytes += name.size();
      ASSERT_TRUE(builder.AddFile(dir, name, c).ok());
    }
  }
  auto index = builder.Build();
  ASSERT_EQ(index->size(), uint32_t(kClasses * kPerClass));
  EXPECT_EQ(index->Path(1001),
            "/data/imagenet/train/n01440765/n01440765_10001.JPEG");
  EXPECT_EQ(index->label(1001), 1);
  const double per_sample = double(index->MemoryBytes()) / index->size();
  EXPECT_LT(per_sample, 12.0 + double(name_bytes) / index->size() + 1);
}

TEST(DatasetIndex, ShardSamplesCostTwentyBytesAndWideLabelsEight) {
  DatasetIndex::Builder narrow(DatasetKind::kTarShards);
  DatasetIndex::Builder wide(DatasetKind::kTarShards);
  for (auto* builder : {&narrow, &wide}) {
    const uint32_t shard = builder->AddShard("/data/shard-000000.tar");
    for (int i = 0; i < 100000; ++i) {
      builder->AddMember(shard, 1536 + 2048 * uint64_t(i), 900, i % 1000);
    }
  }
  wide.AddMember(0, 1, 2, int64_t{1} << 40);
  auto small = narrow.Build();
  auto large = wide.Build();
  EXPECT_LT(double(small->MemoryBytes()) / small->size(), 20.1);
  EXPECT_LT(double(large->MemoryBytes()) / large->size(), 24.1);
  EXPECT_EQ(small->label(99999), 999);
  EXPECT_EQ(large->label(100000), int64_t{1} << 40);
  const MemberRange range = small->Value(7, 0).range;
  EXPECT_EQ(range.offset, 1536 + 2048 * 7u);
  EXPECT_EQ(range.size, 900u);
  EXPECT_EQ(small->Describe(7), "/data/shard-000000.tar member at byte " +
                                    std::to_string(1536 + 2048 * 7));
}

// A manifest of named fields: the image's column (a file) and further
// columns kept as text, a JSON-lines row without a key lacking that field
// (kept, or left out and counted).
TEST(IndexManifest, FieldsKeepTextColumnsAndTheirLargest) {
  testdata::TempDir dir("stoker-manifest");
  const std::string root = dir.path();
  Write(root + "/img/a.jpg", "x");
  Write(root + "/img/b.jpg", "x");
  Write(root + "/pairs.csv",
        "caption,path,ignored\n\"a, \"\"cat\"\"\",img/a.jpg,1\n,img/b.jpg,2\n");
  SampleSchema schema;
  schema.fields = {{{"path"}, true}, {{"caption"}, false}};
  auto csv = IndexManifest(root + "/pairs.csv", {}, schema);
  ASSERT_TRUE(csv.ok()) << csv.status();
  ASSERT_EQ((*csv)->fields(), 2u);
  EXPECT_EQ((*csv)->store(0), FieldStore::kFile);
  EXPECT_EQ((*csv)->Path(1), root + "/img/b.jpg");
  EXPECT_EQ((*csv)->Value(0, 1).text, "a, \"cat\"");
  EXPECT_TRUE((*csv)->Value(1, 1).present);  // an empty cell is a value
  EXPECT_EQ((*csv)->Value(1, 1).text, "");
  EXPECT_EQ((*csv)->largest(1), 8u);
  Write(root + "/pairs.jsonl",
        "{\"path\": \"img/a.jpg\", \"meta\": {\"w\": [1, 2]}}\n"
        "{\"path\": \"img/b.jpg\"}\n"
        "{\"meta\": 3}\n");
  schema.fields[1].source = {"meta"};
  // A row without its image's path: refused (missing=error), left out
  // (missing=skip).
  auto pathless = IndexManifest(root + "/pairs.jsonl", {}, schema);
  EXPECT_NE(pathless.status().message().find("line 3: has no image path"),
            std::string::npos)
      << pathless.status();
  Write(root + "/two.jsonl",
        "{\"path\": \"img/a.jpg\", \"meta\": {\"w\": [1, 2]}}\n"
        "{\"path\": \"img/b.jpg\"}\n");
  auto kept = IndexManifest(root + "/two.jsonl", {}, schema);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ((*kept)->size(), 2u);
  EXPECT_EQ((*kept)->Value(0, 1).text, "{\"w\":[1,2]}");
  EXPECT_FALSE((*kept)->Value(1, 1).present);
  schema.skip_missing = true;
  auto skipped = IndexManifest(root + "/pairs.jsonl", {}, schema);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_EQ((*skipped)->size(), 1u);
  EXPECT_EQ((*skipped)->skipped(), 2u);
  auto none = IndexManifest(root + "/pairs.csv", {},
                            {.fields = {{{"path"}, true}, {{"text"}, false}}});
  EXPECT_NE(none.status().message().find("the header row has no column "
                                         "'text'"),
            std::string::npos)
      << none.status();
}

TEST(DatasetIndex, EachFurtherShardFieldCostsTwelveBytes) {
  DatasetIndex::Builder builder(
      DatasetKind::kTarShards,
      {FieldStore::kMember, FieldStore::kMember, FieldStore::kMember});
  const uint32_t shard = builder.AddShard("/data/pairs-000000.tar");
  constexpr int kSamples = 100000;
  for (int i = 0; i < kSamples; ++i) {
    const uint64_t at = 3072 * uint64_t(i);
    builder.AddMembers(shard, {MemberRange{0, at + 512, 2000},
                               MemberRange{0, at + 2560, uint64_t(i % 90)},
                               i % 7 ? std::optional<MemberRange>{MemberRange{
                                           0, uint64_t{1} << 40, 5}}
                                     : std::nullopt});
  }
  auto index = builder.Build();
  ASSERT_EQ(index->size(), uint32_t(kSamples));
  // A shard number, a label and 12 bytes per field.
  EXPECT_LT(double(index->MemoryBytes()) / index->size(), 4 + 4 + 3 * 12.1);
  EXPECT_EQ(index->Value(7, 1).range.offset, 3072 * 7u + 2560);
  EXPECT_EQ(index->Value(7, 1).range.size, 7u);
  EXPECT_FALSE(index->Value(7, 2).present);
  EXPECT_EQ(index->Value(8, 2).range.offset, uint64_t{1} << 40);
  EXPECT_EQ(index->largest(0), 2000u);
  EXPECT_EQ(index->largest(1), 89u);
}

TEST(DatasetCache, SharesWhileUnchangedAndRebuildsAfterAChange) {
  testdata::TempDir dir("stoker-cache");
  const std::string root = dir.path();
  Write(root + "/cat/a.jpg", "x");
  Write(root + "/dog/deep/b.jpg", "x");
  DatasetCache cache;
  const PathPolicy anywhere;
  auto first = ScanImageFolder(root);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(cache.Keep("k", *first), *first);
  EXPECT_EQ(cache.Find("k", anywhere), *first);
  EXPECT_EQ(cache.Find("other", anywhere), nullptr);
  EXPECT_EQ(cache.usage().indexes, 1u);
  // A second index built from the same files is dropped for the kept one.
  auto again = ScanImageFolder(root);
  EXPECT_EQ(cache.Keep("k", *again), *first);
  // A file added deep down changes its directory: no longer shared.
  Write(root + "/dog/deep/c.jpg", "x");
  EXPECT_EQ(cache.Find("k", anywhere), nullptr);
  auto fresh = ScanImageFolder(root);
  EXPECT_EQ(cache.Keep("k", *fresh), *fresh);
  EXPECT_EQ((*fresh)->size(), 3u);
  // Freed with the last holder.
  first->reset();
  again->reset();
  EXPECT_EQ(cache.usage().indexes, 1u);
  fresh->reset();
  EXPECT_EQ(cache.usage().indexes, 0u);
  EXPECT_EQ(cache.Find("k", anywhere), nullptr);
}

TEST(DatasetCache, AUserWhoCannotReadADirectoryGetsNoSharedIndex) {
  if (!CanActAsOtherUsers()) GTEST_SKIP() << "needs CAP_SETUID/CAP_SETGID";
  testdata::TempDir dir("stoker-cache");
  const std::string root = dir.path();
  Write(root + "/cat/a.jpg", "x");
  Write(root + "/dog/b.jpg", "x");
  ::chmod(root.c_str(), 0755);
  ::chmod((root + "/dog").c_str(), 0755);
  ::chmod((root + "/cat").c_str(), 0700);  // only its owner may list it
  DatasetCache cache;
  const PathPolicy anywhere;
  auto index = ScanImageFolder(root);
  ASSERT_TRUE(index.ok());
  cache.Keep("k", *index);
  FileIdentity nobody{.uid = 65534, .gid = 65534};
  {
    const ActAs as_nobody(&nobody);
    ASSERT_TRUE(as_nobody.status().ok());
    EXPECT_EQ(cache.Find("k", anywhere), nullptr);
  }
  EXPECT_EQ(cache.Find("k", anywhere), *index);
}

}  // namespace
}  // namespace stoker
