#include "daemon/jobs/dataset_sources.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/datasets/image_folder.h"
#include "daemon/datasets/manifest.h"
#include "daemon/datasets/shard_index.h"

namespace stoker {

std::string DatasetKey(const JobConfig& config, const PathPolicy& policy) {
  // NUL cannot appear in a path, so the parts cannot run into each other.
  const absl::string_view nul("\0", 1);
  return absl::StrCat(int(config.dataset_kind), nul, config.dataset_path, nul,
                      absl::StrJoin(config.shards, nul), nul,
                      config.label_field, nul,
                      absl::StrJoin(policy.roots(), nul));
}

std::string DatasetName(const JobConfig& config) {
  switch (config.dataset_kind) {
    case DatasetKind::kTarShards:
      return config.shards.size() == 1
                 ? absl::StrCat("shards ", config.shards[0])
                 : absl::StrCat("shards ", config.shards[0], " and ",
                                config.shards.size() - 1, " more patterns");
    case DatasetKind::kManifest:
      return absl::StrCat("manifest ", config.dataset_path);
    case DatasetKind::kImageFolder:
      break;
  }
  return config.dataset_path;
}

absl::StatusOr<std::shared_ptr<const DatasetIndex>> BuildDatasetIndex(
    const JobConfig& config, const ScanLimits& limits) {
  switch (config.dataset_kind) {
    case DatasetKind::kTarShards:
      return IndexTarShards(config.shards, {config.label_field}, limits);
    case DatasetKind::kManifest:
      return IndexManifest(config.dataset_path, limits);
    case DatasetKind::kImageFolder:
      break;
  }
  return ScanImageFolder(config.dataset_path, limits);
}

}  // namespace stoker
