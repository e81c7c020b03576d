// ImageFolder datasets: root/<class>/<...>/<file>.jpg, read as
// torchvision 0.14's datasets.ImageFolder reads them, so that classes,
// labels and dataset indices mean the same thing in both:
//  * classes are the sorted names of every sub-directory of root (or link
//    to one), hidden ones included: ".ipynb_checkpoints" is a class;
//  * under a class, every entry but "." and ".." is looked at, hidden
//    files and directories included (os.walk); whatever is not a directory
//    is a sample when its name, lower-cased, ends with one of
//    kImageExtensions (so "._x.jpg", "X.JPG" and ".jpg" are samples; a
//    FIFO or broken link so named is one too, and fails when decoded);
//  * a sample's label is the index of its class; samples are ordered by
//    class, then by directory path, then by file name (byte order);
//  * a class without any sample is an error naming it, as torchvision's
//    FileNotFoundError is.
//
// Directory symlinks are followed (torchvision follows them too), but a
// dataset is somebody else's input to a shared daemon, so the scan is
// bounded: a symlink cycle, a tree nested deeper than max_depth, more than
// max_samples images, a scan longer than `timeout` or one cancelled by its
// caller ends it with an error that says which. An unreadable directory is
// an error naming it, never a silent gap (stricter than torchvision, whose
// os.walk skips an unreadable sub-directory of a class without a word).
#ifndef STOKER_DAEMON_DATASETS_IMAGE_FOLDER_H_
#define STOKER_DAEMON_DATASETS_IMAGE_FOLDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/os/path_policy.h"

namespace stoker {

// torchvision's IMG_EXTENSIONS.
inline constexpr const char* kImageExtensions[] = {
    ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"};

// True when `name`, lower-cased, ends with one of kImageExtensions
// (torchvision's has_file_allowed_extension). The content decides the
// format when the file is decoded.
bool IsImageFile(const std::string& name);

// Scans `root`. Errors name the field the path came from (dataset.path):
// INVALID_ARGUMENT when it is empty, not a directory, holds no class
// directory or a class without images (the message names the classes), is
// nested too deep or holds a symlink cycle; NOT_FOUND when it does not
// exist; PERMISSION_DENIED naming a directory that cannot be read or that a
// symlink leads to outside the policy's roots; RESOURCE_EXHAUSTED past
// max_samples or max_entries; DEADLINE_EXCEEDED past the timeout.
// The index stamps every directory it looked into.
absl::StatusOr<std::shared_ptr<const DatasetIndex>> ScanImageFolder(
    const std::string& root, const ScanLimits& limits = {});

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_IMAGE_FOLDER_H_
