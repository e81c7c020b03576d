#include "daemon/datasets/image_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"

namespace stoker {
namespace {

struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator==(const DirId&) const = default;
};

// A directory being listed; closes it on scope exit.
struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};
using DirHandle = std::unique_ptr<DIR, DirCloser>;

// "." and "..": the only entries os.scandir leaves out (hidden ones count).
bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' &&
         (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

absl::Status DirectoryError(const std::string& path, int err) {
  const std::string text = absl::StrCat("dataset.path: cannot read directory '",
                                        path, "': ", std::strerror(err));
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(text);
  if (err == EMFILE || err == ENFILE || err == ENOMEM) {
    return absl::ResourceExhaustedError(text);
  }
  return absl::InvalidArgumentError(text);
}

// One scan: its limits, its counters, and the images it found.
class Scanner {
 public:
  Scanner(const ScanLimits& limits, DatasetIndex::Builder* index)
      : limits_(limits), clock_(limits), index_(index) {}

  // The class directories (by name) under `root_fd`, sorted.
  absl::StatusOr<std::vector<std::string>> Classes(int root_fd,
                                                   const std::string& root);
  // Every image under root/name, as (directory, file name) in that order.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Images(
      int root_fd, const std::string& root, const std::string& name);

 private:
  // What an entry of `dir` is, following symlinks: DT_DIR, DT_REG or
  // DT_UNKNOWN (anything else, or a broken link).
  static unsigned char TypeOf(DIR* dir, const dirent& entry);
  // Opens the sub-directory `name` of `dir_fd` (path `path`), checking it
  // against the ancestors, the depth and, if reached through a symlink,
  // the policy.
  absl::StatusOr<DirHandle> Enter(int dir_fd, const char* name,
                                  const std::string& path, bool via_link);
  absl::Status Walk(DIR* dir, const std::string& path);
  // Counts an entry; checks the entry limit, the clock and cancellation.
  absl::Status Tick();

  const ScanLimits& limits_;
  const ScanClock clock_;
  DatasetIndex::Builder* const index_;
  uint64_t entries_ = 0;
  uint64_t images_ = 0;
  std::vector<std::pair<DirId, std::string>> ancestors_;
  std::vector<std::pair<std::string, std::string>> found_;
};

absl::Status Scanner::Tick() {
  if (++entries_ > limits_.max_entries) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "dataset.path: more than ", limits_.max_entries,
        " directory entries looked at; stokerd scans at most that many "
        "(--max_dataset_samples) for one dataset"));
  }
  if (entries_ % 256 != 0) return absl::OkStatus();
  return clock_.Check(absl::StrCat("entry ", entries_, " of dataset.path"));
}

unsigned char Scanner::TypeOf(DIR* dir, const dirent& entry) {
  if (entry.d_type == DT_DIR || entry.d_type == DT_REG) return entry.d_type;
  if (entry.d_type != DT_LNK && entry.d_type != DT_UNKNOWN) return DT_UNKNOWN;
  struct stat st;
  if (::fstatat(::dirfd(dir), entry.d_name, &st, 0) != 0) return DT_UNKNOWN;
  if (S_ISDIR(st.st_mode)) return DT_DIR;
  if (S_ISREG(st.st_mode)) return DT_REG;
  return DT_UNKNOWN;
}

absl::StatusOr<DirHandle> Scanner::Enter(int dir_fd, const char* name,
                                         const std::string& path,
                                         bool via_link) {
  if (static_cast<int>(ancestors_.size()) > limits_.max_depth) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset.path: '", path, "' is nested more than ",
                     limits_.max_depth, " directories below its class"));
  }
  UniqueFd fd(
      ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return DirectoryError(path, errno);
  FileStamp stamp;
  STOKER_RETURN_IF_ERROR(StampOf(fd.get(), path, /*directory=*/true, &stamp));
  const DirId id{stamp.dev, stamp.ino};
  for (const auto& [ancestor, ancestor_path] : ancestors_) {
    if (ancestor == id) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset.path: '", path, "' leads back to '",
                       ancestor_path, "' (a directory symlink cycle)"));
    }
  }
  if (via_link && limits_.policy != nullptr) {
    if (absl::Status allowed = limits_.policy->CheckOpen(fd.get());
        !allowed.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("dataset.path: '", path, "' ", allowed.message()));
    }
  }
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) return DirectoryError(path, errno);
  (void)fd.release();  // the DIR owns it now
  ancestors_.emplace_back(id, path);
  index_->AddStamp(std::move(stamp));
  return DirHandle(dir);
}

absl::Status Scanner::Walk(DIR* dir, const std::string& path) {
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      if (errno != 0) return DirectoryError(path, errno);
      return absl::OkStatus();
    }
    if (IsDotOrDotDot(entry->d_name)) continue;
    if (absl::Status ok = Tick(); !ok.ok()) return ok;
    const unsigned char type = TypeOf(dir, *entry);
    // Like os.walk: whatever is not a directory (after links) is a file,
    // and torchvision keeps it if its name ends in an image extension. A
    // FIFO or a broken link named x.jpg is a sample that fails to decode.
    if (type != DT_DIR && IsImageFile(entry->d_name)) {
      if (++images_ > limits_.max_samples) {
        return absl::ResourceExhaustedError(
            absl::StrCat("dataset.path holds more than ", limits_.max_samples,
                         " images, the most stokerd takes in one dataset "
                         "(--max_dataset_samples)"));
      }
      found_.emplace_back(path, entry->d_name);
    } else if (type == DT_DIR) {
      const std::string sub = absl::StrCat(path, "/", entry->d_name);
      auto child =
          Enter(::dirfd(dir), entry->d_name, sub, entry->d_type != DT_DIR);
      if (!child.ok()) return child.status();
      absl::Status walked = Walk(child->get(), sub);
      ancestors_.pop_back();
      if (!walked.ok()) return walked;
    }
  }
}

absl::StatusOr<std::vector<std::string>> Scanner::Classes(
    int root_fd, const std::string& root) {
  UniqueFd fd(::dup(root_fd));
  DIR* dir = fd ? ::fdopendir(fd.get()) : nullptr;
  if (dir == nullptr) return DirectoryError(root, errno);
  (void)fd.release();
  DirHandle handle(dir);
  std::vector<std::string> classes;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      if (errno != 0) return DirectoryError(root, errno);
      break;
    }
    if (IsDotOrDotDot(entry->d_name)) continue;
    if (absl::Status ok = Tick(); !ok.ok()) return ok;
    if (TypeOf(dir, *entry) == DT_DIR) classes.emplace_back(entry->d_name);
  }
  std::sort(classes.begin(), classes.end());
  return classes;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
Scanner::Images(int root_fd, const std::string& root, const std::string& name) {
  const std::string path = absl::StrCat(root, "/", name);
  struct stat st;
  if (::fstat(root_fd, &st) != 0) return DirectoryError(root, errno);
  ancestors_ = {{DirId{st.st_dev, st.st_ino}, root}};
  found_.clear();
  struct stat link;
  const bool via_link =
      ::fstatat(root_fd, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(link.st_mode);
  auto dir = Enter(root_fd, name.c_str(), path, via_link);
  if (!dir.ok()) return dir.status();
  if (absl::Status walked = Walk(dir->get(), path); !walked.ok()) {
    return walked;
  }
  std::sort(found_.begin(), found_.end());
  return std::move(found_);
}

// torchvision's FileNotFoundError, as a status: the first classes by name
// (a long name cut short, so that the message stays short).
absl::Status EmptyClassesError(const std::vector<std::string>& empty) {
  constexpr size_t kNamed = 3;
  constexpr size_t kNameBytes = 32;
  std::string names;
  for (size_t i = 0; i < std::min(empty.size(), kNamed); ++i) {
    const std::string& name = empty[i];
    size_t cut = std::min(name.size(), kNameBytes);
    while (cut < name.size() && cut > 0 && (name[cut] & 0xC0) == 0x80) --cut;
    absl::StrAppend(&names, i ? ", " : "", name.substr(0, cut),
                    cut < name.size() ? "..." : "");
  }
  if (empty.size() > kNamed) {
    absl::StrAppend(&names, " and ", empty.size() - kNamed, " more");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("dataset.path: found no valid file for the classes ", names,
                   ": each needs a file ending in one of ",
                   absl::StrJoin(kImageExtensions, ", "),
                   " (as torchvision's ImageFolder)"));
}

}  // namespace

bool IsImageFile(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const char* extension : kImageExtensions) {
    if (absl::EndsWith(lower, extension)) return true;
  }
  return false;
}

absl::StatusOr<std::shared_ptr<const DatasetIndex>> ScanImageFolder(
    const std::string& root, const ScanLimits& limits) {
  if (root.empty()) {
    return absl::InvalidArgumentError("dataset.path is empty");
  }
  const UniqueFd root_fd(
      ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
  if (!root_fd) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("dataset.path '", root, "' does not exist"));
    }
    if (errno == ENOTDIR) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataset.path '", root, "' is not a directory"));
    }
    return DirectoryError(root, errno);
  }
  DatasetIndex::Builder index(DatasetKind::kImageFolder);
  FileStamp stamp;
  STOKER_RETURN_IF_ERROR(StampOf(root_fd.get(), root, true, &stamp));
  index.AddStamp(std::move(stamp));
  Scanner scanner(limits, &index);
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> classes,
                          scanner.Classes(root_fd.get(), root));
  if (classes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset.path '", root,
        "' holds no class directory: expected <root>/<class>/<image>"));
  }
  std::vector<std::string> empty;
  for (size_t label = 0; label < classes.size(); ++label) {
    STOKER_ASSIGN_OR_RETURN(
        auto images, scanner.Images(root_fd.get(), root, classes[label]));
    if (images.empty()) empty.push_back(classes[label]);
    for (const auto& [directory, file] : images) {
      STOKER_RETURN_IF_ERROR(index.AddFile(directory, file, int64_t(label)));
    }
  }
  if (!empty.empty()) return EmptyClassesError(empty);
  index.SetClassNames(std::move(classes));
  return index.Build();
}

}  // namespace stoker
