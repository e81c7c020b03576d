#include "daemon/datasets/remote_shards.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "daemon/datasets/brace_expand.h"
#include "daemon/datasets/shard_index.h"
#include "daemon/remote/remote_url.h"

namespace stoker {
namespace {

using Entry = std::shared_ptr<const ShardCache::Entry>;

// Fetches shards into the cache, several at once; the first failure stops
// the others.
class ShardFetch {
 public:
  ShardFetch(const std::vector<std::string>& names,
             const RemoteShardSource& source)
      : names_(names), source_(source), entries_(names.size()) {
    policy_ = source.fetch;
    policy_.cancelled = [this] {
      return parallel_.stopped() ||
             (source_.fetch.cancelled && source_.fetch.cancelled());
    };
  }

  absl::Status Run(RemoteTally* tally) {
    std::atomic<uint64_t> hits{0};
    const absl::Status fetched = parallel_.Run(
        names_.size(), source_.parallel, [&](size_t i) -> absl::Status {
          bool hit = false;
          STOKER_ASSIGN_OR_RETURN(entries_[i], FetchOne(i, &hit));
          hits += hit;
          return absl::OkStatus();
        });
    tally->hits += hits.load();
    return fetched;
  }

  const std::vector<Entry>& entries() const { return entries_; }

 private:
  absl::StatusOr<Entry> FetchOne(size_t i, bool* hit) {
    const std::string& name = names_[i];
    ObjectStore& store = *source_.store;
    STOKER_ASSIGN_OR_RETURN(const std::string url, store.Identity(name));
    absl::Status changed;
    for (int round = 0; round < 3; ++round) {
      // This job's own probe, before its cached copy is used.
      // Probed already (ProbeTotalSize) the first time round.
      STOKER_ASSIGN_OR_RETURN(const ObjectVersion version,
                              round == 0 && !source_.probed.empty()
                                  ? source_.probed[i]
                                  : store.Probe(name, policy_));
      const std::string key =
          absl::StrCat(url, "\n", version.version, "\n", version.size);
      absl::StatusOr<Entry> entry = source_.cache->Get(
          key, version.size, source_.user,
          [&](int fd) { return store.Get(name, version, fd, policy_); },
          [this] {
            return policy_.cancelled() || absl::Now() > policy_.deadline;
          },
          hit,
          {.room_until = source_.room_wait > absl::ZeroDuration()
                             ? absl::Now() + source_.room_wait
                             : absl::InfinitePast(),
           .durable = source_.durable});
      if (absl::IsResourceExhausted(entry.status()) &&
          !absl::StrContains(entry.status().message(), name)) {  // which one
        return absl::ResourceExhaustedError(absl::StrCat(
            "remote shard '", name, "': ", entry.status().message()));
      }
      if (entry.ok() || !absl::IsAborted(entry.status())) return entry;
      changed = entry.status();  // replaced while fetched: its new version
    }
    return absl::AbortedError(
        absl::StrCat(changed.message(),
                     ", three times in a row; create the job again "
                     "once the shard stops changing"));
  }

  const std::vector<std::string>& names_;
  const RemoteShardSource& source_;
  FetchPolicy policy_;
  std::vector<Entry> entries_;
  ParallelFor parallel_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexFetchedShards(
    const std::vector<std::string>& names, const SampleSchema& schema,
    const ScanLimits& limits, const RemoteShardSource& source,
    RemoteTally* tally) {
  if (source.cache == nullptr) {
    return absl::FailedPreconditionError(
        "this stokerd has no shard cache (--cache_dir), which remote shards "
        "are read through");
  }
  if (source.store == nullptr) {
    return absl::FailedPreconditionError("remote shards need an object store");
  }
  ShardFetch fetch(names, source);
  tally->shards = names.size();
  const FetchTally before = source.store->tally();
  const absl::Status fetched = fetch.Run(tally);
  const FetchTally after = source.store->tally();
  tally->fetch = {.requests = after.requests - before.requests,
                  .retries = after.retries - before.retries,
                  .resumed = after.resumed - before.resumed,
                  .bytes = after.bytes - before.bytes};
  STOKER_RETURN_IF_ERROR(fetched);
  ShardIndexer index(limits, schema);
  for (size_t i = 0; i < names.size(); ++i) {
    const Entry& entry = fetch.entries()[i];
    STOKER_RETURN_IF_ERROR(index.Add(entry->fd(), names[i], names[i]).status());
    index.builder().AddHeld({entry->fd(), entry});
  }
  return index.Build(names.size());
}

absl::StatusOr<std::vector<std::string>> RemoteShardNames(
    const std::vector<std::string>& patterns, size_t max_shards) {
  std::vector<std::string> names;
  for (const std::string& pattern : patterns) {
    STOKER_RETURN_IF_ERROR(ExpandBraces(pattern, kMaxShards, &names));
  }
  if (names.empty()) {
    return absl::InvalidArgumentError("dataset.shards names no shard");
  }
  if (names.size() > max_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dataset.shards name ", names.size(), " remote shards, more than the ",
        max_shards, " one job may read: use larger shards"));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    STOKER_RETURN_IF_ERROR(CheckRemoteName(
        absl::StrCat("dataset.shards (shard ", i, ")"), names[i]));
  }
  return names;
}

absl::StatusOr<uint64_t> ProbeTotalSize(const std::vector<std::string>& names,
                                        RemoteShardSource* source_out) {
  const RemoteShardSource& source = *source_out;
  std::vector<ObjectVersion> probed(names.size());
  std::atomic<uint64_t> total{0};
  STOKER_RETURN_IF_ERROR(ParallelFor().Run(
      names.size(), source.parallel, [&](size_t i) -> absl::Status {
        STOKER_ASSIGN_OR_RETURN(probed[i],
                                source.store->Probe(names[i], source.fetch));
        total += probed[i].size;
        return absl::OkStatus();
      }));
  source_out->probed = std::move(probed);
  return total.load();
}

absl::StatusOr<std::shared_ptr<const DatasetIndex>> IndexRemoteShards(
    const std::vector<std::string>& patterns, const SampleSchema& schema,
    const ScanLimits& limits, const RemoteShardSource& source,
    RemoteTally* tally) {
  STOKER_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                          RemoteShardNames(patterns, kMaxRemoteShards));
  return IndexFetchedShards(names, schema, limits, source, tally);
}

}  // namespace stoker
