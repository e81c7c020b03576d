// DatasetSource: one interface for every kind of dataset a job may read,
// chosen once from what the job names (MakeDatasetSource): an ImageFolder, a
// manifest, local tar shards, or remote shards (s3://, http(s)://) read
// through the node's shard cache. Each source knows how its index is built,
// with whose file identity, and whether jobs may share it.
//
// The job's remote access (its credentials) is not part of the dataset: it
// reaches a remote source inside the ObjectStore the caller makes for the
// job (RemoteShardSource), and goes no further.
#ifndef STOKER_DAEMON_DATASETS_DATASET_SOURCE_H_
#define STOKER_DAEMON_DATASETS_DATASET_SOURCE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_cache.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/remote_shards.h"
#include "daemon/datasets/sample_schema.h"
#include "daemon/datasets/scan_limits.h"
#include "stoker/vocabulary.h"  // DatasetKind

namespace stoker {

// What a job names as its dataset.
struct DatasetRef {
  DatasetKind kind = DatasetKind::kImageFolder;
  std::string path;                 // an ImageFolder's root, a manifest
  std::vector<std::string> shards;  // tar shards: brace patterns
  SampleSchema schema;
};

// Whether `ref` names remote shards (the first pattern decides; JobSpec
// validation refuses a mix).
bool NamesRemoteShards(const DatasetRef& ref);

// The dataset in a log line: its path, its manifest, or its shards.
std::string DatasetName(const DatasetRef& ref);

// What makes two jobs' local datasets the same: kind, paths (an
// ImageFolder's resolved root, a manifest's path, the shard patterns), the
// schema (the label field; the fields' sources, the image's, missing), and
// the roots in force. Jobs asking for other fields of the same data get an
// index of their own.
std::string ShareKey(const DatasetRef& ref, const PathPolicy& policy);

class DatasetSource {
 public:
  virtual ~DatasetSource() = default;

  // The dataset as the index was built from it (an ImageFolder's root
  // resolved through the roots once Index has run).
  const DatasetRef& ref() const { return ref_; }

  // Whether the dataset's files are opened with the job owner's identity
  // (the caller takes it before Index): true for local data; false for
  // remote shards, whose cached copies are stokerd's own.
  virtual bool ReadsAsOwner() const = 0;

  // The dataset's index: one `shared` keeps for jobs over the same data
  // when its files still hold, else a new one (kept there for the next
  // job); remote shards' indexes are each job's own. Errors are the
  // builder's (ScanImageFolder, IndexManifest, IndexTarShards,
  // IndexRemoteShards).
  virtual absl::StatusOr<std::shared_ptr<const DatasetIndex>> Index(
      const ScanLimits& limits, DatasetCache* shared) = 0;

 protected:
  explicit DatasetSource(DatasetRef ref) : ref_(std::move(ref)) {}
  DatasetRef ref_;
};

// The source for `ref`, chosen by its kind and, for shards, by the scheme
// of their names. `remote` (the cache, the job's store and user) is what a
// remote source reads through; it must outlive the source, and may be null
// when `ref` names no remote shard.
std::unique_ptr<DatasetSource> MakeDatasetSource(
    DatasetRef ref, const RemoteShardSource* remote);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_DATASET_SOURCE_H_
