// One entry point for every kind of dataset a job may read: the key under
// which jobs share its index, and building that index.
#ifndef STOKER_DAEMON_JOBS_DATASET_SOURCES_H_
#define STOKER_DAEMON_JOBS_DATASET_SOURCES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// What makes two jobs' datasets the same: kind, paths (an ImageFolder's
// resolved root, a manifest's path, the shard patterns), the label field,
// and the roots in force.
std::string DatasetKey(const JobConfig& config, const PathPolicy& policy);

// The dataset in a log line: its path, its manifest, or its shards.
std::string DatasetName(const JobConfig& config);

// Builds the index of config's dataset with the calling thread's file
// identity (see ScanImageFolder, IndexTarShards, IndexManifest).
absl::StatusOr<std::shared_ptr<const DatasetIndex>> BuildDatasetIndex(
    const JobConfig& config, const ScanLimits& limits);

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_DATASET_SOURCES_H_
