#include "daemon/jobs/dataset_sources.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/datasets/image_folder.h"
#include "daemon/datasets/manifest.h"
#include "daemon/datasets/shard_index.h"
#include "daemon/spec/job_spec.h"

namespace stoker {

SampleSchema SchemaOf(const JobConfig& config) {
  SampleSchema schema{.labels = {config.label_field},
                      .skip_missing = config.missing == MissingField::kSkip};
  if (!config.named_fields) return schema;
  for (const FieldConfig& field : config.fields) {
    // An image or a mask is a file (a manifest's column holds its path).
    schema.fields.push_back({field.source, field.role == FieldRole::kImage ||
                                               field.role == FieldRole::kMask});
  }
  return schema;
}

std::string DatasetKey(const JobConfig& config, const PathPolicy& policy) {
  // NUL cannot appear in a path, nor a control character in a field's
  // source, so \1 (a field) and \2 (a source) keep the parts apart. Which
  // field is the image matters to a manifest's index (a file or a text),
  // not to a shard's (members all).
  const absl::string_view nul("\0", 1);
  const SampleSchema schema = SchemaOf(config);
  const bool manifest = config.dataset_kind == DatasetKind::kManifest;
  std::string fields = schema.skip_missing ? "skip" : "error";
  for (const SchemaField& field : schema.fields) {
    absl::StrAppend(&fields, "\1", manifest && field.image ? "I" : "B");
    for (const std::string& source : field.source) {
      absl::StrAppend(&fields, "\2", source);
    }
  }
  return absl::StrCat(int(config.dataset_kind), nul, config.dataset_path, nul,
                      absl::StrJoin(config.shards, nul), nul,
                      config.label_field, nul, fields, nul,
                      absl::StrJoin(policy.roots(), nul));
}

absl::Status BoundFields(uint64_t cap, JobConfig* config) {
  if (!config->named_fields) return absl::OkStatus();
  if (config->max_field_bytes > cap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_field_bytes ", config->max_field_bytes,
        " is more than stokerd takes (its max_field_bytes setting, ", cap,
        ")"));
  }
  if (config->max_field_bytes == 0) config->max_field_bytes = uint32_t(cap);
  return absl::OkStatus();
}

absl::Status SizeFields(const DatasetIndex& index, JobConfig* config) {
  if (!config->named_fields) return absl::OkStatus();
  for (uint32_t f = 0; f < config->fields.size(); ++f) {
    FieldConfig& field = config->fields[f];
    if (field.role == FieldRole::kBytes) {
      field.row_bytes =
          std::min<uint64_t>(index.largest(f), config->max_field_bytes);
    }
  }
  return CheckSlotBytes(*config);
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
      return IndexTarShards(config.shards, SchemaOf(config), limits);
    case DatasetKind::kManifest:
      return IndexManifest(config.dataset_path, limits, SchemaOf(config));
    case DatasetKind::kImageFolder:
      break;
  }
  return ScanImageFolder(config.dataset_path, limits);
}

}  // namespace stoker
