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
    const std::vector<std::string>& patterns, const SampleSchema& schema,
    const ScanLimits& limits) {
  STOKER_ASSIGN_OR_RETURN(const std::vector<std::string> paths,
                          ExpandShardPatterns(patterns));
  if (paths.empty()) {
    return absl::InvalidArgumentError("dataset.shards names no shard");
  }
  const PathPolicy& policy = PolicyOf(limits);
  ShardIndexer index(limits, schema);
  for (const std::string& path : paths) {
    std::string resolved;
    FileStamp stamp;
    struct stat st;
    STOKER_ASSIGN_OR_RETURN(const UniqueFd fd,
                            OpenDatasetFile(path, policy, "dataset.shards",
                                            &resolved, &stamp, &st));
    STOKER_RETURN_IF_ERROR(
        index.Add(fd.get(), path, std::move(resolved)).status());
    index.builder().AddStamp(std::move(stamp));
  }
  return index.Build(paths.size());
}

namespace {

std::vector<FieldStore> ShardStores(const SampleSchema& schema) {
  return std::vector<FieldStore>(schema.classic() ? 1 : schema.fields.size(),
                                 FieldStore::kMember);
}

}  // namespace

ShardIndexer::ShardIndexer(const ScanLimits& limits, const SampleSchema& schema)
    : limits_(limits),
      schema_(schema),
      clock_(limits),
      index_(DatasetKind::kTarShards, ShardStores(schema)) {
  for (const SchemaField& field : schema.fields) {
    field_suffixes_.push_back(field.source);
  }
}

absl::Status ShardIndexer::CheckSamples(uint64_t more) const {
  if (index_.samples() + more <= limits_.max_samples) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("dataset.shards hold more than ", limits_.max_samples,
                   " samples, the most stokerd takes in one dataset "
                   "(--max_dataset_samples)"));
}

absl::StatusOr<uint32_t> ShardIndexer::Add(int fd, const std::string& name,
                                           std::string table_name) {
  STOKER_RETURN_IF_ERROR(clock_.Check(absl::StrCat("shard '", name, "'")));
  const TarLimits tar{.max_member_bytes = kMaxFileBytes,
                      .max_members = limits_.max_entries - members_seen_};
  STOKER_ASSIGN_OR_RETURN(const std::vector<TarMember> members,
                          ReadTarMembers(fd, name, tar));
  members_seen_ += members.size();
  if (!schema_.classic()) {
    uint64_t skipped = 0;
    STOKER_ASSIGN_OR_RETURN(const std::vector<FieldSample> samples,
                            GroupFieldSamples(name, members, field_suffixes_,
                                              schema_.skip_missing, &skipped));
    STOKER_RETURN_IF_ERROR(CheckSamples(samples.size()));
    const uint32_t shard = index_.AddShard(std::move(table_name));
    for (const FieldSample& sample : samples) {
      index_.AddMembers(shard, sample.members);
    }
    index_.Skip(skipped);
    return shard;
  }
  STOKER_ASSIGN_OR_RETURN(const std::vector<ShardSample> samples,
                          GroupShardSamples(fd, name, members, schema_.labels));
  STOKER_RETURN_IF_ERROR(CheckSamples(samples.size()));
  const uint32_t shard = index_.AddShard(std::move(table_name));
  for (const ShardSample& sample : samples) {
    index_.AddMember(shard, sample.offset, uint32_t(sample.size), sample.label);
  }
  return shard;
}

absl::StatusOr<std::shared_ptr<const DatasetIndex>> ShardIndexer::Build(
    size_t shards) {
  if (index_.samples() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset.shards: the ", shards,
        schema_.classic()
            ? " shards hold no sample (an image member with a label beside it)"
            : " shards hold no sample with the job's fields"));
  }
  return index_.Build();
}

}  // namespace stoker
