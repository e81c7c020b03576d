// WebDataset samples from a shard's members (see tar_members.h): the
// members that share a key (the name up to the first dot after the last
// slash) and follow one another form a sample, as webdataset's
// group_by_keys forms them; its image is the member whose extension (what
// follows that dot, lower-cased) is an image one, its label the integer
// in its "cls" member or in a field of its "json" member.
#ifndef STOKER_DAEMON_DATASETS_WEBDATASET_H_
#define STOKER_DAEMON_DATASETS_WEBDATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/datasets/tar_members.h"

namespace stoker {

struct ShardSample {
  std::string key;
  uint64_t offset = 0;  // the image member's bytes in the shard
  uint64_t size = 0;
  int64_t label = 0;
};

// The image extensions, in the order one is chosen when a sample has
// several: jpg jpeg png webp ppm pgm bmp tif tiff.
bool IsImageExtension(const std::string& extension);

// Where a sample's label comes from: its "cls" member (an integer as
// text), or, when `json_field` is set, that field of its "json" member (a
// top-level name, or a JSON pointer when it starts with '/').
struct LabelSource {
  std::string json_field;
};

// Largest "json" member read for a label.
inline constexpr uint64_t kMaxLabelJsonBytes = 64 << 10;

// Groups `members` of the shard open at `fd` (named `shard` in errors)
// into samples, reading each label member (cls: at most 64 bytes; json: at
// most kMaxLabelJsonBytes). Errors are INVALID_ARGUMENT naming the shard
// and the sample's key: a sample without an image or without a label, a
// label that is not an integer, a json member that does not parse or lacks
// the field.
absl::StatusOr<std::vector<ShardSample>> GroupShardSamples(
    int fd, const std::string& shard, const std::vector<TarMember>& members,
    const LabelSource& labels = {});

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_WEBDATASET_H_
