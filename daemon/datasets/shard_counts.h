// The shard table of a streamed dataset (shard_table.h): each remote
// shard's sample count, taken, for each directory of shards, from the first
// of:
//  1. an index file `stoker-index.tsv` beside the shards (written by
//     `stokerctl index`), fetched with the job's own access;
//  2. open_clip's `sizes.json` beside the shards (counts only);
//  3. the counts this user's earlier scan of those shards left in the
//     shard cache's directory;
//  4. a scan: each shard fetched once (into a temporary file, not the
//     cache) and its headers counted; the counts are then kept for 3.
// A later job over the same shards therefore starts at once.
#ifndef STOKER_DAEMON_DATASETS_SHARD_COUNTS_H_
#define STOKER_DAEMON_DATASETS_SHARD_COUNTS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/datasets/shard_table.h"
#include "daemon/remote/http_fetch.h"
#include "daemon/remote/object_store.h"

namespace stoker {

// The file names looked for beside the shards.
inline constexpr char kShardIndexFile[] = "stoker-index.tsv";
inline constexpr char kSizesJsonFile[] = "sizes.json";

struct ShardCountsSource {
  ObjectStore* store = nullptr;  // the job's own
  // Where scans keep their counts ("" : nowhere): a directory of
  // stokerd's, one file per user and directory of shards.
  std::string counts_dir;
  uid_t user = 0;
  FetchPolicy fetch;
  int parallel = 4;  // shards scanned at once
  // Where a scanned shard is written while it is counted.
  std::string scratch_dir = "/tmp";
};

// Where the counts came from, shard by shard.
struct CountsTally {
  uint64_t index_file = 0;
  uint64_t sizes_json = 0;
  uint64_t kept = 0;  // an earlier scan's
  uint64_t scanned = 0;
};

// The table of `names` (remote shard names, in dataset order). Errors: an
// index file or sizes.json that does not parse (INVALID_ARGUMENT naming
// it), and a scan's (the store's errors naming the shard, ReadTarMembers').
absl::StatusOr<std::shared_ptr<const ShardTable>> LoadShardTable(
    const std::vector<std::string>& names, const ShardCountsSource& source,
    CountsTally* tally);

// One shard's count, size and version from its headers: a local tar file
// open at `fd` (`name` in errors; no version), or a remote object fetched
// through `store` into a temporary file in `scratch_dir`.
absl::StatusOr<ShardInfo> CountLocalShard(int fd, const std::string& name);
absl::StatusOr<ShardInfo> CountRemoteShard(ObjectStore& store,
                                           const std::string& name,
                                           const FetchPolicy& policy,
                                           const std::string& scratch_dir);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SHARD_COUNTS_H_
