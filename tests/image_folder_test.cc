#include "daemon/jobs/image_folder.h"

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
  Touch(root + "/ant/.hidden.jpg");
  Touch(root + "/.cache/e.jpg");
  Touch(root + "/readme.jpg");  // not in a class directory
  auto dataset = ScanImageFolder(root);
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_EQ(dataset->class_names, (std::vector<std::string>{"ant", "zebra"}));
  ASSERT_EQ(dataset->samples.size(), 4u);
  EXPECT_EQ(dataset->samples[0].path, root + "/ant/d.jpg");
  EXPECT_EQ(dataset->samples[1].path, root + "/ant/sub/c.jpg");
  EXPECT_EQ(dataset->samples[2].path, root + "/zebra/a.JPEG");
  EXPECT_EQ(dataset->samples[3].path, root + "/zebra/b.jpg");
  EXPECT_EQ(dataset->samples[0].label, 0);
  EXPECT_EQ(dataset->samples[1].label, 0);
  EXPECT_EQ(dataset->samples[2].label, 1);
  EXPECT_EQ(dataset->samples[3].label, 1);
}

TEST(ScanImageFolder, ErrorsNameTheField) {
  testdata::TempDir dir("stoker-folder");
  auto missing = ScanImageFolder(dir.path() + "/absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("dataset.path"),
            absl::string_view::npos);
  auto empty = ScanImageFolder(dir.path());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("holds no images"),
            absl::string_view::npos);
  Touch(dir.path() + "/file.jpg");
  auto file = ScanImageFolder(dir.path() + "/file.jpg");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScanImageFolder("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stoker
