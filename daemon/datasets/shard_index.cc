#include "daemon/datasets/shard_index.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "daemon/datasets/brace_expand.h"
#include "daemon/datasets/sample_file.h"

namespace stoker {
namespace {

// Every path `patterns` stand for, in order.
absl::StatusOr<std::vector<std::string>> ExpandShardPatterns(
    const std::vector<std::string>& patterns) {
  std::vector<std::string> paths;
  for (const std::string& pattern : patterns) {
    STOKER_RETURN_IF_ERROR(ExpandBraces(pattern, kMaxShards, &paths));
  }
  return paths;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexTarShards(
    const std::vector<std::string>& patterns, const LabelSource& labels,
    const ScanLimits& limits) {
  STOKER_ASSIGN_OR_RETURN(const std::vector<std::string> paths,
                          ExpandShardPatterns(patterns));
  if (paths.empty()) {
    return absl::InvalidArgumentError("dataset.shards names no shard");
  }
  const PathPolicy& policy = PolicyOf(limits);
  const ScanClock clock(limits);
  uint64_t members_seen = 0;  // all shards together stay under max_entries
  DatasetIndex::Builder index(DatasetKind::kTarShards);
  for (const std::string& path : paths) {
    STOKER_RETURN_IF_ERROR(clock.Check(absl::StrCat("shard '", path, "'")));
    std::string resolved;
    FileStamp stamp;
    struct stat st;
    STOKER_ASSIGN_OR_RETURN(const UniqueFd fd,
                            OpenDatasetFile(path, policy, "dataset.shards",
                                            &resolved, &stamp, &st));
    const TarLimits tar{.max_member_bytes = kMaxFileBytes,
                        .max_members = limits.max_entries - members_seen};
    STOKER_ASSIGN_OR_RETURN(const std::vector<TarMember> members,
                            ReadTarMembers(fd.get(), path, tar));
    members_seen += members.size();
    STOKER_ASSIGN_OR_RETURN(const std::vector<ShardSample> samples,
                            GroupShardSamples(fd.get(), path, members, labels));
    if (index.samples() + samples.size() > limits.max_samples) {
      return absl::ResourceExhaustedError(
          absl::StrCat("dataset.shards hold more than ", limits.max_samples,
                       " samples, the most stokerd takes in one dataset "
                       "(--max_dataset_samples)"));
    }
    const uint32_t shard = index.AddShard(std::move(resolved));
    for (const ShardSample& sample : samples) {
      index.AddMember(shard, sample.offset, uint32_t(sample.size),
                      sample.label);
    }
    index.AddStamp(std::move(stamp));
  }
  if (index.samples() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset.shards: the ", paths.size(),
        " shards hold no sample (an image member with a label beside it)"));
  }
  return index.Build();
}

}  // namespace stoker
