// StreamFeed: what a streamed job's workers read. Each position of this
// rank's epoch (StreamOrder) lies in a window of shards; the feed fetches
// the window the next row needs and, while it holds fewer than two, the one
// after it, on the registry's FetchThreads, so that the workers read one
// window while the next arrives. It lets a window go once the job's oldest
// unfinished batch has passed it (its shards then become evictable in the
// cache). A batch that spans more windows holds them all meanwhile.
//
// The sample's draws are keyed by its number in the whole dataset (its
// shard's first sample in table order plus its member), so they do not
// depend on the window it was read in.
//
// Thread-safety: thread-safe. Lock order: a Job's mutex, then the shard
// cache's, then the feed's: the feed never calls the cache (nor lets a
// window go) with its lock held, and calls `on_ready` with no lock held.
#ifndef STOKER_DAEMON_JOBS_STREAM_FEED_H_
#define STOKER_DAEMON_JOBS_STREAM_FEED_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "daemon/datasets/streamed_shards.h"
#include "daemon/jobs/fetch_threads.h"
#include "daemon/jobs/stream_order.h"
#include "daemon/spec/job_config.h"

namespace stoker {

// Where one position of an epoch is read from.
struct StreamPlace {
  std::shared_ptr<const DatasetIndex> index;  // the window's
  uint32_t sample = 0;                        // in index
  uint64_t draw_id = 0;                       // in the whole dataset
};

class StreamFeed : public std::enable_shared_from_this<StreamFeed>,
                   public ShardCache::FutureUse {
 public:
  // Tells the shard cache what the job will read (FutureUse) until Stop.
  // When the cache has no room for a window, `make_room` is asked to end
  // an orphaned job of the user (true if it did), before waiting.
  StreamFeed(std::shared_ptr<const StreamedShards> shards,
             const JobConfig& config, FetchThreads* threads,
             std::function<void()> on_ready,
             std::function<bool()> make_room = nullptr);
  ~StreamFeed() override;

  // Samples of the dataset, and this rank's share of an epoch.
  uint64_t samples() const { return shards_->table().samples(); }
  uint64_t samples_per_rank() const;
  const StreamedShards& shards() const { return *shards_; }
  // The shard cache room its two windows take (StreamRoom), computed once.
  uint64_t room() const { return room_; }
  // What GetJob reports of the dataset: its shard table's numbers.
  DatasetSummary Summary() const;

  enum class State { kReady, kWaiting, kFailed };
  // Position `position` of epoch `epoch`: kReady with *place; kWaiting
  // while its window is fetched (on_ready is called when it is); kFailed
  // with *error when its window could not be fetched.
  State Locate(uint64_t epoch, uint64_t position, StreamPlace* place,
               absl::Status* error);
  // Positions before (epoch, position) will not be asked for again.
  void Advance(uint64_t epoch, uint64_t position);
  // No more fetches; the windows held are let go.
  void Stop();

  // How many samples after the oldest position in use this job next reads
  // a sample of the shard `identity` names: this epoch or the next.
  uint64_t NextUse(const std::string& identity) const override;

 private:
  using WindowKey = std::pair<uint64_t, uint32_t>;  // epoch, window
  struct Slot {
    bool done = false;
    absl::Status error;
    std::vector<StreamSample> order;  // the window's samples, read order
    std::shared_ptr<const StreamWindow> window;
  };
  const StreamOrder& OrderOf(uint64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts fetching window `key` unless it is held or under way: always
  // when a row waits for it (`needed`), else only while fewer than two
  // windows are held.
  void Want(WindowKey key, bool needed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The window after `key` (the next epoch's first after the last), if the
  // job reads one.
  std::optional<WindowKey> After(WindowKey key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Fetched(WindowKey key,
               absl::StatusOr<std::shared_ptr<const StreamWindow>> window,
               std::vector<StreamSample> order);

  const std::shared_ptr<const StreamedShards> shards_;
  const Sharding sharding_;
  const uint64_t seed_;
  const bool shuffle_;
  const uint32_t window_;
  const uint64_t room_;
  const uint64_t last_epoch_;  // UINT64_MAX: until deleted
  FetchThreads* const threads_;
  const std::function<void()> on_ready_;
  const std::function<bool()> make_room_;
  std::vector<uint64_t> first_sample_;  // per table shard: draw ids
  // Shard by its identity's hash (8 bytes, not the URL: 200k shards' URLs
  // would take tens of MB): a collision only blurs NextUse.
  absl::flat_hash_map<size_t, uint32_t> shard_of_identity_;

  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // Per epoch order kept: where each shard's first run starts in it.
  std::map<uint64_t, std::vector<uint64_t>> first_use_ ABSL_GUARDED_BY(mu_);
  // The window of the oldest position still in use (see Advance; what
  // NextUse counts from).
  WindowKey oldest_ ABSL_GUARDED_BY(mu_) = {0, 0};
  std::map<uint64_t, std::shared_ptr<const StreamOrder>> orders_
      ABSL_GUARDED_BY(mu_);
  std::map<WindowKey, Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_STREAM_FEED_H_
