// ImageFolder datasets: root/<class>/<...>/<file>.jpg, as torchvision reads
// them. Classes are the sorted names of root's sub-directories; a sample's
// label is the index of its class; samples are ordered by class, then by
// directory, then by file name (byte order), the order torchvision's
// ImageFolder uses, so dataset indices mean the same thing in both.
#ifndef STOKER_DAEMON_JOBS_IMAGE_FOLDER_H_
#define STOKER_DAEMON_JOBS_IMAGE_FOLDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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

// True for the file extensions the decoders read (.jpg, .jpeg, .png, any
// case).
bool IsImageFile(const std::string& name);

// Scans `root`. Errors name the field the path came from (dataset.path):
// INVALID_ARGUMENT when it is empty, not a directory or holds no images;
// NOT_FOUND when it does not exist.
absl::StatusOr<Dataset> ScanImageFolder(const std::string& root);

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_IMAGE_FOLDER_H_
