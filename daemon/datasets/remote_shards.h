// The index of a WebDataset whose shards are remote (s3://, http://,
// https://; see remote/remote_url.h): every shard is fetched whole into the
// node's shard cache (or found there) while the job is created, and indexed
// from the cached copy exactly as a local shard is (shard_index.h), so a
// job over remote shards knows its length, shards by rank and resumes
// exactly as one over local shards, and reads no network once created.
//
// Why whole shards at CreateJob rather than members streamed during the
// epoch: a shard's member count is known only from all of its headers,
// which lie between its members, so the index reads every byte anyway (a
// ranged scan would make one request per member); keeping those bytes
// makes the index and the first epoch's reads one transfer, and lets every
// epoch shuffle samples across all shards as DistributedSampler does.
//
// Each shard is checked with a probe (for HTTP(S) and S3 a 1-byte ranged
// GET, see http_fetch.h) made through the job's own store, with its access,
// before its cached copy is used, hit or miss: a user reads through the
// cache only objects their credentials may read, at the version the store
// has now.
#ifndef STOKER_DAEMON_DATASETS_REMOTE_SHARDS_H_
#define STOKER_DAEMON_DATASETS_REMOTE_SHARDS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/datasets/dataset_index.h"
#include "daemon/datasets/scan_limits.h"
#include "daemon/datasets/webdataset.h"
#include "daemon/remote/http_fetch.h"
#include "daemon/remote/object_store.h"
#include "daemon/remote/shard_cache.h"

namespace stoker {

// The most remote shards one job's dataset may name (each is a file of
// the cache, and a descriptor the job holds while it runs).
inline constexpr size_t kMaxRemoteShards = 16384;

struct RemoteShardSource {
  ShardCache* cache = nullptr;
  // The job's own view of the remote side (its access inside).
  ObjectStore* store = nullptr;
  uid_t user = 0;     // whose job: what it holds counts against them
  FetchPolicy fetch;  // its deadline and cancellation included
  int parallel = 4;   // shards fetched at once
  // The shards' versions as this job just probed them (ProbeTotalSize),
  // used instead of a probe the first time each is fetched; empty: none.
  std::vector<ObjectVersion> probed;
  // How long a shard may wait for room in the user's share of the cache
  // (their own entries let go) before RESOURCE_EXHAUSTED.
  absl::Duration room_wait = absl::ZeroDuration();
  // Whether what is fetched is synced and kept across restarts (see
  // ShardCache::GetOptions).
  bool durable = true;
};

// What indexing remote shards did (for the daemon's log and stats).
struct RemoteTally {
  uint64_t shards = 0;
  uint64_t hits = 0;  // found in the cache
  FetchTally fetch;
};

// Indexes remote shards (all of `patterns`, after brace expansion, must be
// remote; at most kMaxRemoteShards). Errors name the shard: those of the
// store's Probe and Get (a shard that changes during three fetches in a
// row is ABORTED), of
// ShardCache::Get (RESOURCE_EXHAUSTED when the shards do not fit the
// cache), and those IndexTarShards gives for a shard's contents.
absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexRemoteShards(
    const std::vector<std::string>& patterns, const SampleSchema& schema,
    const ScanLimits& limits, const RemoteShardSource& source,
    RemoteTally* tally);

// Every remote shard `patterns` stand for (brace patterns), each checked
// (CheckRemoteName); INVALID_ARGUMENT past `max_shards` or for none.
absl::StatusOr<std::vector<std::string>> RemoteShardNames(
    const std::vector<std::string>& patterns, size_t max_shards);

// The sizes of `names` (checked) added up, each from a probe through the
// source's store, `parallel` at once, the versions kept in
// source->probed; the first error (the store's, naming the shard).
absl::StatusOr<uint64_t> ProbeTotalSize(const std::vector<std::string>& names,
                                        RemoteShardSource* source);

// IndexRemoteShards of remote shard names already expanded and checked
// (a streamed job's window of shards): any number of them.
absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexFetchedShards(
    const std::vector<std::string>& names, const SampleSchema& schema,
    const ScanLimits& limits, const RemoteShardSource& source,
    RemoteTally* tally);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_REMOTE_SHARDS_H_
