#include "daemon/datasets/image_folder.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "bench/support/process.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

void Touch(const std::string& path) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream(path) << "x";
}

TEST(ScanImageFolder, ClassesSortedLabelsByClassFilesInTorchvisionOrder) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  Touch(root + "/zebra/b.jpg");
  Touch(root + "/zebra/a.JPEG");
  Touch(root + "/ant/sub/c.jpg");
  Touch(root + "/ant/d.jpg");
  Touch(root + "/ant/notes.txt");
  Touch(root + "/readme.jpg");  // not in a class directory
  auto dataset = ScanImageFolder(root);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->class_names(),
            (std::vector<std::string>{"ant", "zebra"}));
  ASSERT_EQ((*dataset)->size(), 4u);
  EXPECT_EQ((*dataset)->Path(0), root + "/ant/d.jpg");
  EXPECT_EQ((*dataset)->Path(1), root + "/ant/sub/c.jpg");
  EXPECT_EQ((*dataset)->Path(2), root + "/zebra/a.JPEG");
  EXPECT_EQ((*dataset)->Path(3), root + "/zebra/b.jpg");
  EXPECT_EQ((*dataset)->label(0), 0);
  EXPECT_EQ((*dataset)->label(1), 0);
  EXPECT_EQ((*dataset)->label(2), 1);
  EXPECT_EQ((*dataset)->label(3), 1);
}

std::vector<std::string> PathsUnder(
    const std::shared_ptr<const DatasetIndex>& dataset,
    const std::string& root) {
  std::vector<std::string> paths;
  for (uint32_t i = 0; i < dataset->size(); ++i) {
    paths.push_back(dataset->Path(i).substr(root.size() + 1));
  }
  return paths;
}

// torchvision lists classes with os.scandir and files with os.walk: only
// "." and ".." are left out.
TEST(ScanImageFolder, HiddenClassesDirectoriesAndFilesCountAsInTorchvision) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  Touch(root + "/.ipynb_checkpoints/x.jpg");
  Touch(root + "/cat/._photo.jpg");  // macOS metadata: a sample too
  Touch(root + "/cat/photo.jpg");
  Touch(root + "/cat/.thumbs/t.png");
  auto dataset = ScanImageFolder(root);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ((*dataset)->class_names(),
            (std::vector<std::string>{".ipynb_checkpoints", "cat"}));
  EXPECT_EQ(
      PathsUnder(*dataset, root),
      (std::vector<std::string>{".ipynb_checkpoints/x.jpg", "cat/._photo.jpg",
                                "cat/photo.jpg", "cat/.thumbs/t.png"}));
  EXPECT_EQ((*dataset)->label(0), 0);
  EXPECT_EQ((*dataset)->label(3), 1);
}

// has_file_allowed_extension: the lower-cased name ends with one of
// IMG_EXTENSIONS, the dot included.
TEST(ScanImageFolder, ExtensionsAreTorchvisionsAnyCaseOnTheWholeName) {
  for (const char* yes :
       {"a.jpg", "b.JPG", "c.Jpeg", "d.png", "e.ppm", "f.BMP", "g.pgm", "h.tif",
        "i.TIFF", "j.webp", ".jpg", "k.tar.jpg"}) {
    EXPECT_TRUE(IsImageFile(yes)) << yes;
  }
  for (const char* no :
       {"jpg", "a.gif", "b.jpg.txt", "c.pbm", "d.jpe", "e.jfif", "f", ""}) {
    EXPECT_FALSE(IsImageFile(no)) << no;
  }
}

// Directories sort by their whole path, as Python sorts os.walk's roots:
// "a-b" ('-' is 0x2d) comes before "a/b" ('/' is 0x2f).
TEST(ScanImageFolder, DirectoriesSortByWholePathAsPythonSortsWalkRoots) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  for (const char* path : {"c/z.jpg", "c/a/b/1.jpg", "c/a-b/2.jpg", "c/a/3.jpg",
                           "c/A/4.jpg", "c/a.jpg"}) {
    Touch(root + "/" + path);
  }
  auto dataset = ScanImageFolder(root);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(
      PathsUnder(*dataset, root),
      (std::vector<std::string>{"c/a.jpg", "c/z.jpg", "c/A/4.jpg", "c/a/3.jpg",
                                "c/a-b/2.jpg", "c/a/b/1.jpg"}));
}

// os.walk puts whatever is not a directory among the files: a FIFO or a
// broken link named like an image is a sample (it fails when decoded).
TEST(ScanImageFolder, NonRegularEntriesNamedLikeImagesAreSamples) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  Touch(root + "/c/a.jpg");
  ASSERT_EQ(::mkfifo((root + "/c/b.jpg").c_str(), 0600), 0);
  std::filesystem::create_symlink(root + "/absent", root + "/c/c.jpg");
  std::filesystem::create_directories(root + "/c/d.jpg");  // a directory
  auto dataset = ScanImageFolder(root);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(PathsUnder(*dataset, root),
            (std::vector<std::string>{"c/a.jpg", "c/b.jpg", "c/c.jpg"}));
}

TEST(ScanImageFolder, ManyLongEmptyClassesMakeAShortMessage) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  Touch(root + "/bird/a.jpg");
  const std::string long_name(200, 'x');
  for (int i = 0; i < 40; ++i) {
    std::filesystem::create_directories(root + "/" + std::to_string(i + 10) +
                                        long_name);
  }
  auto dataset = ScanImageFolder(root);
  ASSERT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(dataset.status().message());
  EXPECT_LE(message.size(), 300u) << message;
  EXPECT_NE(message.find("the classes 10" + std::string(30, 'x') + "..., 11"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(" and 37 more"), std::string::npos) << message;
}

TEST(ScanImageFolder, ALongNameIsCutOnACharacterBoundary) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  Touch(root + "/bird/a.jpg");
  // 31 bytes, then two-byte characters: byte 32 is inside the first one.
  const std::string name = std::string(31, 'a') + "\xc3\xa9\xc3\xa9";
  std::filesystem::create_directories(root + "/" + name);
  auto dataset = ScanImageFolder(root);
  ASSERT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dataset.status().message().find(std::string(31, 'a') + "..."),
            absl::string_view::npos)
      << dataset.status();
}

TEST(ScanImageFolder, AClassWithoutImagesIsAnErrorNamingIt) {
  testdata::TempDir dir("stoker-folder");
  const std::string root = dir.path();
  Touch(root + "/bird/a.jpg");
  Touch(root + "/cat/notes.txt");
  std::filesystem::create_directories(root + "/.git");
  auto dataset = ScanImageFolder(root);
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dataset.status().message().find(
                "found no valid file for the classes .git, cat"),
            absl::string_view::npos)
      << dataset.status();
  EXPECT_NE(dataset.status().message().find(".tiff, .webp"),
            absl::string_view::npos)
      << dataset.status();
}

TEST(ScanImageFolder, ErrorsNameTheField) {
  testdata::TempDir dir("stoker-folder");
  auto missing = ScanImageFolder(dir.path() + "/absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("dataset.path"),
            absl::string_view::npos);
  auto empty = ScanImageFolder(dir.path());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("holds no class directory"),
            absl::string_view::npos);
  Touch(dir.path() + "/file.jpg");
  auto file = ScanImageFolder(dir.path() + "/file.jpg");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScanImageFolder("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
