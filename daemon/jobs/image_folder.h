// ImageFolder datasets: root/<class>/<...>/<file>.jpg, as torchvision reads
// them. Classes are the sorted names of root's sub-directories; a sample's
// label is the index of its class; samples are ordered by class, then by
// directory, then by file name (byte order), the order torchvision's
// ImageFolder uses, so dataset indices mean the same thing in both.
//
// Directory symlinks are followed (torchvision follows them too), but a
// dataset is somebody else's input to a shared daemon, so the scan is
// bounded: a symlink cycle, a tree nested deeper than max_depth, more than
// max_samples images, a scan longer than `timeout` or one cancelled by its
// caller ends it with an error that says which. An unreadable directory is
// an error naming it (torchvision raises there too), never a silent gap.
#ifndef STOKER_DAEMON_JOBS_IMAGE_FOLDER_H_
#define STOKER_DAEMON_JOBS_IMAGE_FOLDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/os/path_policy.h"

namespace stoker {

struct Sample {
  std::string path;
  int64_t label = 0;
};

struct Dataset {
  std::string root;
  std::vector<std::string> class_names;
  std::vector<Sample> samples;
};

struct ScanLimits {
  uint64_t max_samples = uint64_t{1} << 24;
  // Directory entries looked at, images or not (a class linked to /usr).
  uint64_t max_entries = uint64_t{1} << 26;
  int max_depth = 32;  // directories below a class directory
  absl::Duration timeout = absl::Minutes(5);
  // Directories reached through a symlink must lie inside its roots.
  const PathPolicy* policy = nullptr;
  // Polled while scanning; true ends the scan (CANCELLED).
  std::function<bool()> cancelled;
};

// True for the file extensions the decoders read (.jpg, .jpeg, .png, any
// case).
bool IsImageFile(const std::string& name);

// Scans `root`. Errors name the field the path came from (dataset.path):
// INVALID_ARGUMENT when it is empty, not a directory, holds no images, is
// nested too deep or holds a symlink cycle; NOT_FOUND when it does not
// exist; PERMISSION_DENIED naming a directory that cannot be read or that a
// symlink leads to outside the policy's roots; RESOURCE_EXHAUSTED past
// max_samples or max_entries; DEADLINE_EXCEEDED past the timeout.
absl::StatusOr<Dataset> ScanImageFolder(const std::string& root,
                                        const ScanLimits& limits = {});

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_IMAGE_FOLDER_H_
