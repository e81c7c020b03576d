#include "daemon/jobs/image_folder.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

bool IsHidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] == '.';
}

// Every image under `class_dir`, in (directory, file name) order.
std::vector<std::string> ScanClass(const fs::path& class_dir) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(
      class_dir,
      fs::directory_options::follow_directory_symlink |
          fs::directory_options::skip_permission_denied,
      ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (IsHidden(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (IsImageFile(name)) {
      found.emplace_back(it->path().parent_path().string(), name);
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  paths.reserve(found.size());
  for (const auto& [dir, name] : found) paths.push_back(dir + "/" + name);
  return paths;
}

}  // namespace

bool IsImageFile(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string ext = absl::AsciiStrToLower(name.substr(dot + 1));
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

absl::StatusOr<Dataset> ScanImageFolder(const std::string& root) {
  if (root.empty()) {
    return absl::InvalidArgumentError("dataset.path is empty");
  }
  std::error_code ec;
  const fs::file_status status = fs::status(root, ec);
  if (!fs::exists(status)) {
    return absl::NotFoundError(
        absl::StrCat("dataset.path '", root, "' does not exist"));
  }
  if (!fs::is_directory(status)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset.path '", root, "' is not a directory"));
  }
  Dataset dataset;
  dataset.root = root;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!IsHidden(it->path()) && it->is_directory(ec)) {
      dataset.class_names.push_back(it->path().filename().string());
    }
  }
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat(
        "dataset.path '", root, "' cannot be read: ", ec.message()));
  }
  std::sort(dataset.class_names.begin(), dataset.class_names.end());
  for (size_t label = 0; label < dataset.class_names.size(); ++label) {
    for (std::string& path :
         ScanClass(fs::path(root) / dataset.class_names[label])) {
      dataset.samples.push_back({std::move(path), static_cast<int64_t>(label)});
    }
  }
  if (dataset.samples.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset.path '", root,
                     "' holds no images: expected <root>/<class>/<image>.jpg"));
  }
  return dataset;
}

}  // namespace stoker
