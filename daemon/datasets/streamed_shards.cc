#include "daemon/datasets/streamed_shards.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace stoker {

uint32_t StreamWindow::SampleOf(uint32_t shard, uint32_t member) const {
  const size_t k =
      std::find(shards.begin(), shards.end(), shard) - shards.begin();
  return first[k] + member;
}

StreamedShards::StreamedShards(std::shared_ptr<const ShardTable> table,
                               SampleSchema schema,
                               std::unique_ptr<ObjectStore> store,
                               RemoteShardSource remote,
                               absl::Duration fetch_timeout)
    : table_(std::move(table)),
      schema_(std::move(schema)),
      store_(std::move(store)),
      remote_(std::move(remote)),
      fetch_timeout_(fetch_timeout) {}

std::string StreamedShards::Identity(uint32_t shard) const {
  return store_->Identity(std::string(table_->name(shard))).value_or("");
}

absl::StatusOr<std::shared_ptr<const StreamWindow>> StreamedShards::Fetch(
    const std::vector<uint32_t>& shards,
    const std::function<bool()>& cancelled) const {
  auto window = std::make_shared<StreamWindow>();
  window->shards = shards;
  std::vector<std::string> names;
  for (uint32_t s : shards) {
    names.emplace_back(table_->name(s));
    window->bytes += table_->size(s);
  }
  RemoteShardSource remote = remote_;
  remote.store = store_.get();
  remote.probed.clear();  // numbered by the dataset's shards, not these
  remote.fetch.deadline = absl::Now() + fetch_timeout_;
  remote.fetch.cancelled = cancelled;
  remote.room_wait = kRoomWait;
  // A window is read once and soon evicted: not synced to disk, and not
  // trusted after a restart (fetched again then).
  remote.durable = false;
  const ScanLimits limits{.cancelled = cancelled};
  RemoteTally tally;
  STOKER_ASSIGN_OR_RETURN(
      window->index,
      IndexFetchedShards(names, schema_, limits, remote, &tally));
  // Samples per shard, against the table's counts: an epoch's length and
  // every rank's share were computed from them.
  std::vector<uint32_t> found(shards.size(), 0);
  for (uint32_t i = 0; i < window->index->size(); ++i) {
    ++found[window->index->shard_of(i)];
  }
  uint32_t next = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    if (found[k] != table_->samples(shards[k])) {
      return absl::DataLossError(absl::StrCat(
          "remote shard '", names[k], "' holds ", found[k],
          " samples, not the ", table_->samples(shards[k]),
          " its shard index says: it changed since it was counted; write "
          "the index again with `stokerctl index` and put it beside the "
          "shards (it comes before any counts stokerd kept)"));
    }
    window->first.push_back(next);
    next += found[k];
  }
  return window;
}

}  // namespace stoker
