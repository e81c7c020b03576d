// DatasetCache: one index per dataset, shared by every job that reads it.
//
// Jobs hold their index (shared_ptr); the cache only remembers it (weak),
// so an index is freed when the last job using it ends. A cached index is
// reused only when every file and directory it was built from (its
// stamps) still opens, for the asking user and inside the roots, with the
// same identity, size and times: the user proves it may read what the
// index came from, and a directory that gained, lost or renamed an entry,
// or a shard or manifest that was rewritten, makes a new index. (A change
// within the file system's timestamp granularity of the first scan can go
// unseen; the files themselves are opened and checked again when read.)
//
// Jobs created at the same moment over the same data may each build an
// index; Keep() then hands all but the first the one already kept, so that
// only one stays in memory.
//
// Thread-safety: thread-safe.
#ifndef STOKER_DAEMON_DATASETS_DATASET_CACHE_H_
#define STOKER_DAEMON_DATASETS_DATASET_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/os/path_policy.h"

namespace stoker {

class DatasetCache {
 public:
  // The live index kept for `key`, if its stamps still hold when checked
  // with the calling thread's file identity; nullptr otherwise.
  std::shared_ptr<const DatasetIndex> Find(const std::string& key,
                                           const PathPolicy& policy);
  // Keeps `index` for `key` and returns it; or returns the live index
  // already kept for `key` when it was built from the same stamps.
  std::shared_ptr<const DatasetIndex> Keep(
      const std::string& key, std::shared_ptr<const DatasetIndex> index);

  struct Usage {
    uint64_t indexes = 0;  // live ones
    uint64_t bytes = 0;    // their DatasetIndex::MemoryBytes()
  };
  Usage usage() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<const DatasetIndex>> kept_
      ABSL_GUARDED_BY(mu_);
};

// True when every stamp of `index` still holds (see DatasetCache).
bool StampsHold(const DatasetIndex& index, const PathPolicy& policy);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_DATASET_CACHE_H_
