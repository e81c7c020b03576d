// A job's config to its dataset (daemon/datasets/dataset_source.h): what
// it names, the schema of its samples, and the bytes fields' sizes once
// the index is known.
#ifndef STOKER_DAEMON_JOBS_DATASET_SOURCES_H_
#define STOKER_DAEMON_JOBS_DATASET_SOURCES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/dataset_source.h"
#include "daemon/datasets/sample_schema.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// What each sample of config's dataset holds: a classic sample, or the
// job's named fields (their sources, which one is a manifest's image, and
// whether samples without one are left out).
SampleSchema SchemaOf(const JobConfig& config);

// The dataset config names, with its schema.
DatasetRef DatasetRefOf(const JobConfig& config);

// ShareKey and DatasetName of config's dataset.
std::string DatasetKey(const JobConfig& config, const PathPolicy& policy);
std::string DatasetName(const JobConfig& config);

// A job's bytes fields against the daemon's bound `cap` (its
// max_field_bytes setting): the job's max_field_bytes, 0 meaning `cap`;
// INVALID_ARGUMENT above it.
absl::Status BoundFields(uint64_t cap, JobConfig* config);

// Sizes each bytes field's part of a slot from `index` (built for config's
// schema): the largest value the dataset holds, within max_field_bytes (a
// larger value fails its sample when read). INVALID_ARGUMENT if a slot
// would then pass its limit.
absl::Status SizeFields(const DatasetIndex& index, JobConfig* config);

// SizeFields without an index (a streamed dataset's values are seen only
// when read): each bytes field's part of a slot is max_field_bytes.
absl::Status SizeFieldsAtMost(JobConfig* config);

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_DATASET_SOURCES_H_
