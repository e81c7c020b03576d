// StreamedShards: one streamed job's remote shards (see docs/remote.md,
// "Streaming"): their shard table, and the windows of shards the job holds
// at a time, each fetched into the shard cache (or found there) after this
// job's own probe and indexed from its headers, as IndexRemoteShards does
// for a whole dataset. The job's store (its credentials) lives as long as
// the job does, since its shards are fetched while it runs.
//
// Thread-safety: thread-safe (Fetch may run for several windows at once).
#ifndef STOKER_DAEMON_DATASETS_STREAMED_SHARDS_H_
#define STOKER_DAEMON_DATASETS_STREAMED_SHARDS_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/remote_shards.h"
#include "daemon/datasets/sample_schema.h"
#include "daemon/datasets/shard_table.h"

namespace stoker {

// Shards held together: their index, and where each one's samples start
// in it.
struct StreamWindow {
  std::shared_ptr<const DatasetIndex> index;
  std::vector<uint32_t> shards;  // table numbers, in index order
  std::vector<uint32_t> first;   // first sample of each in index
  // The index's sample for member `member` of table shard `shard` (which
  // the window holds).
  uint32_t SampleOf(uint32_t shard, uint32_t member) const;
  uint64_t bytes = 0;  // the shards' sizes
};

class StreamedShards {
 public:
  // `remote.store` is ignored: `store` is kept instead, for the job's life.
  StreamedShards(std::shared_ptr<const ShardTable> table, SampleSchema schema,
                 std::unique_ptr<ObjectStore> store, RemoteShardSource remote,
                 absl::Duration fetch_timeout);

  const ShardTable& table() const { return *table_; }
  std::shared_ptr<const ShardTable> shared_table() const { return table_; }

  // How long a window's shard waits for room in its user's share of the
  // cache before RESOURCE_EXHAUSTED.
  static constexpr absl::Duration kRoomWait = absl::Seconds(2);

  // The window of `shards` (table numbers, distinct). Errors: the store's
  // and the cache's (naming the shard), the headers' (IndexTarShards'),
  // CANCELLED when `cancelled` says so, and DATA_LOSS naming a shard whose
  // sample count is no longer the one the table has (rewritten since it was
  // counted: write the index file again).
  absl::StatusOr<std::shared_ptr<const StreamWindow>> Fetch(
      const std::vector<uint32_t>& shards,
      const std::function<bool()>& cancelled) const;

  // What the fetches did so far.
  FetchTally tally() const { return store_->tally(); }
  // The cache the shards are read through, and what identifies shard s
  // there (its store's Identity: its URL; "" if it has none).
  ShardCache* cache() const { return remote_.cache; }
  std::string Identity(uint32_t shard) const;

 private:
  const std::shared_ptr<const ShardTable> table_;
  const SampleSchema schema_;
  const std::unique_ptr<ObjectStore> store_;
  const RemoteShardSource remote_;
  const absl::Duration fetch_timeout_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_STREAMED_SHARDS_H_
