// WebDataset samples from a shard's members (see tar_members.h), grouped as
// webdataset's group_by_keys groups them: a member's key is its path up to
// the first dot of its base name and its suffix the rest, lower-cased
// (base_plus_ext); members that share a key and follow one another form a
// sample. A classic sample's image is the member whose suffix is an image
// extension, its label the integer in its "cls" member or in a field of its
// "json" member; a sample of named fields takes, for each field, the first
// of its suffixes the sample has.
#ifndef STOKER_DAEMON_DATASETS_WEBDATASET_H_
#define STOKER_DAEMON_DATASETS_WEBDATASET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"  // MemberRange
#include "daemon/datasets/sample_schema.h"  // LabelSource
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

// A member name's key and suffix as webdataset's base_plus_ext splits it
// (the regular expression ^((?:.*/|)[^.]+)[.]([^/]*)$), the suffix
// lower-cased; nullopt for a name it does not split (a base name without a
// dot), which belongs to no sample.
struct KeySuffix {
  std::string key;
  std::string suffix;
};
std::optional<KeySuffix> SplitMemberName(const std::string& name);

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

// A sample of named fields: for each field, its member (nullopt: none).
struct FieldSample {
  std::vector<std::optional<MemberRange>> members;
};

// Groups `members` of `shard` into samples of `fields` (each field's
// suffixes, in the order they are preferred), reading no member. A sample
// without some field is left out and counted in *skipped when
// `skip_missing`, else kept with that field absent. INVALID_ARGUMENT
// naming the shard and the sample's key for a sample with two members of
// one suffix (webdataset refuses them too).
absl::StatusOr<std::vector<FieldSample>> GroupFieldSamples(
    const std::string& shard, const std::vector<TarMember>& members,
    const std::vector<std::vector<std::string>>& fields, bool skip_missing,
    uint64_t* skipped);

// The samples `members` form, as both groupings above form them before
// they look at suffixes (what a streamed dataset's shard index counts).
uint64_t CountSampleKeys(const std::vector<TarMember>& members);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_WEBDATASET_H_
