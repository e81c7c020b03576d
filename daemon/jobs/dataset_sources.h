// One entry point for every kind of dataset a job may read: the key under
// which jobs share its index, and building that index.
#ifndef STOKER_DAEMON_JOBS_DATASET_SOURCES_H_
#define STOKER_DAEMON_JOBS_DATASET_SOURCES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/sample_schema.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// What each sample of config's dataset holds: a classic sample, or the
// job's named fields (their sources, which one is a manifest's image, and
// whether samples without one are left out).
SampleSchema SchemaOf(const JobConfig& config);

// What makes two jobs' datasets the same: kind, paths (an ImageFolder's
// resolved root, a manifest's path, the shard patterns), the schema (the
// label field; the fields' sources, the image's, missing), and the roots
// in force. Jobs asking for other fields of the same data get an index of
// their own.
std::string DatasetKey(const JobConfig& config, const PathPolicy& policy);

// A job's bytes fields against the daemon's bound `cap` (its
// max_field_bytes setting): the job's max_field_bytes, 0 meaning `cap`;
// INVALID_ARGUMENT above it.
absl::Status BoundFields(uint64_t cap, JobConfig* config);

// Sizes each bytes field's part of a slot from `index` (built for config's
// schema): the largest value the dataset holds, within max_field_bytes (a
// larger value fails its sample when read). INVALID_ARGUMENT if a slot
// would then pass its limit.
absl::Status SizeFields(const DatasetIndex& index, JobConfig* config);

// The dataset in a log line: its path, its manifest, or its shards.
std::string DatasetName(const JobConfig& config);

// Builds the index of config's dataset with the calling thread's file
// identity (see ScanImageFolder, IndexTarShards, IndexManifest).
absl::StatusOr<std::shared_ptr<const DatasetIndex>> BuildDatasetIndex(
    const JobConfig& config, const ScanLimits& limits);

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_DATASET_SOURCES_H_
