#include "daemon/jobs/dataset_sources.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
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

DatasetRef DatasetRefOf(const JobConfig& config) {
  return {.kind = config.dataset_kind,
          .path = config.dataset_path,
          .shards = config.shards,
          .schema = SchemaOf(config)};
}

std::string DatasetKey(const JobConfig& config, const PathPolicy& policy) {
  return ShareKey(DatasetRefOf(config), policy);
}

std::string DatasetName(const JobConfig& config) {
  return DatasetName(DatasetRefOf(config));
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

absl::Status SizeFieldsAtMost(JobConfig* config) {
  if (!config->named_fields) return absl::OkStatus();
  for (FieldConfig& field : config->fields) {
    if (field.role == FieldRole::kBytes)
      field.row_bytes = config->max_field_bytes;
  }
  return CheckSlotBytes(*config);
}

}  // namespace stoker
