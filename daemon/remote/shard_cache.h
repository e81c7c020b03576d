// ShardCache: remote shards kept whole on the node's disk, shared by every
// job that reads the same object version.
//
// An entry is keyed by the fetch URL, the object's version (ETag, or
// Last-Modified) and its size, so a replaced object is a new entry and an
// old copy is never served for it. Files are stokerd's own (mode 0600 in a
// 0700 directory): jobs read them through the descriptor the cache hands
// out, never by path, and a job gets one only after its own credentials
// were checked against the object (the 1-byte ranged GET its index makes, see
// datasets/remote_shards.h), so the cache never lets a user read what they
// could not fetch.
//
// A shard is fetched into a ".partial-" file and renamed into place only
// when whole and synced: a partial download is never served, and one left
// by a crash is removed when the cache opens. Entries survive restarts (a
// "<name>.key" file beside each "<name>.tar" holds its key). The least
// recently used entries that no running job holds (or, while streamed jobs
// say what they will read, the entries needed furthest ahead: FutureUse)
// are evicted to keep the total under the size bound, and only when the
// new shard then fits; a
// shard that does not fit beside the held ones is RESOURCE_EXHAUSTED. One
// user's jobs may hold (or be fetching) at most max_bytes_per_user of it,
// so that no user can take the whole cache from the others. One stokerd
// per directory (a lock file).
//
// Thread-safety: thread-safe. Jobs asking for the same missing entry at
// once share one fetch (each has checked its own access first); all jobs
// holding an entry share one descriptor.
#ifndef STOKER_DAEMON_REMOTE_SHARD_CACHE_H_
#define STOKER_DAEMON_REMOTE_SHARD_CACHE_H_

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/unique_fd.h"

namespace stoker {

class ShardCache {
 public:
  // Opens (making it, mode 0700, if missing) the cache at `dir`, holding at
  // most `max_bytes` of shards. FAILED_PRECONDITION when another stokerd
  // holds it or it is not stokerd's own.
  static absl::StatusOr<std::unique_ptr<ShardCache>> Open(
      std::string dir, uint64_t max_bytes, uint64_t max_bytes_per_user);
  ~ShardCache();

  // A cached shard, open for reading; not evicted while held.
  class Entry {
   public:
    ~Entry();
    int fd() const { return fd_->get(); }
    uint64_t size() const { return size_; }

   private:
    friend class ShardCache;
    Entry(ShardCache* cache, std::string key, uid_t user,
          std::shared_ptr<const UniqueFd> fd, uint64_t size)
        : cache_(cache),
          key_(std::move(key)),
          user_(user),
          fd_(std::move(fd)),
          size_(size) {}
    ShardCache* cache_;
    std::string key_;
    uid_t user_;
    std::shared_ptr<const UniqueFd> fd_;  // shared by the entry's holders
    uint64_t size_;
  };

  // What a running job will read, as far as it knows: how far ahead (in
  // samples of its own order) its next use of an object lies, by the
  // object's identity (the URL an entry's key starts with); UINT64_MAX
  // when it does not foresee one. Streamed jobs register theirs (see
  // jobs/stream_feed.h). Called with the cache's lock held: it must not
  // call the cache.
  class FutureUse {
   public:
    virtual ~FutureUse() = default;
    virtual uint64_t NextUse(const std::string& identity) const = 0;
  };
  // While any is registered, room is made by evicting the unheld entry
  // whose next use by any registered job lies furthest ahead (the least
  // recently used among those none foresees), instead of the least
  // recently used one.
  void AddFutureUse(const FutureUse* use);
  void RemoveFutureUse(const FutureUse* use);

  // Writes an entry's `size` bytes to the file open at `fd`.
  using Fill = std::function<absl::Status(int fd)>;

  // The entry for `key` of `size` bytes, held for `user`: the cached one
  // (*hit), or a new one `fill` writes (its error is returned, and nothing
  // is kept). While another job fetches the same entry, waits for it unless
  // `give_up` says so (CANCELLED). RESOURCE_EXHAUSTED past the bounds; past
  // the user's share only after waiting until `room_until` for the user's
  // holds to go (or give_up). A new entry that is not `durable` is neither
  // synced to disk nor kept across a restart (a streamed window's: read
  // once, soon evicted).
  struct GetOptions {
    absl::Time room_until = absl::InfinitePast();
    bool durable = true;
  };
  absl::StatusOr<std::shared_ptr<const Entry>> Get(
      const std::string& key, uint64_t size, uid_t user, const Fill& fill,
      const std::function<bool()>& give_up, bool* hit,
      const GetOptions& options);
  absl::StatusOr<std::shared_ptr<const Entry>> Get(
      const std::string& key, uint64_t size, uid_t user, const Fill& fill,
      const std::function<bool()>& give_up, bool* hit) {
    return Get(key, size, user, fill, give_up, hit, GetOptions{});
  }

  struct Usage {
    uint64_t files = 0;
    uint64_t bytes = 0;  // ready entries and fetches under way
    uint64_t held_bytes = 0;
    uint64_t max_bytes = 0;
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t fetched_bytes = 0;  // of shards fetched whole into it
    uint64_t evictions = 0;
  };
  Usage usage() const;
  const std::string& dir() const { return dir_; }
  // The most one user's jobs may hold: the per-user bound, within the
  // whole cache's.
  uint64_t max_bytes_for_user() const {
    return std::min(max_bytes_, max_bytes_per_user_);
  }

 private:
  struct Slot {
    std::string name;  // file stem in dir_
    uint64_t size = 0;
    uint64_t last_use = 0;
    bool ready = false;
    std::shared_ptr<const UniqueFd> fd;  // while held
    // Holds by user (none: evictable): an entry counts once against each
    // user holding it, however many of their jobs do (eight ranks over one
    // dataset).
    absl::flat_hash_map<uid_t, uint32_t> holders;
  };
  ShardCache(std::string dir, uint64_t max_bytes, uint64_t max_bytes_per_user,
             UniqueFd lock)
      : dir_(std::move(dir)),
        max_bytes_(max_bytes),
        max_bytes_per_user_(max_bytes_per_user),
        lock_(std::move(lock)) {}

  void Load();
  // Makes room for `size` more bytes, evicting unheld entries, or evicts
  // nothing and says why not.
  absl::Status MakeRoom(uint64_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckUser(uid_t user, uint64_t size) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NewName(const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<const Entry>> Hold(const std::string& key,
                                                    uid_t user, Slot* slot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Evict(absl::flat_hash_map<std::string, Slot>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The entry MakeRoom evicts next (see FutureUse); end() if none.
  absl::flat_hash_map<std::string, Slot>::iterator Victim()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits a while (false at once) if `user`'s share has no room for `size`
  // more, until `until` or give_up; true if it waited.
  bool WaitForRoom(uid_t user, uint64_t size, absl::Time until,
                   const std::function<bool()>& give_up)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Fetch(const std::string& key, const std::string& name,
                     uint64_t size, const Fill& fill, bool durable);
  void Release(const std::string& key, uid_t user);
  void Remove(const std::string& name);

  const std::string dir_;
  const uint64_t max_bytes_;
  const uint64_t max_bytes_per_user_;
  const UniqueFd lock_;
  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  absl::flat_hash_map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> names_ ABSL_GUARDED_BY(mu_);
  // Bytes each user's jobs hold or are fetching (an entry counts once for
  // each user holding it).
  absl::flat_hash_map<uid_t, uint64_t> by_user_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t uses_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t fetched_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<const FutureUse*> futures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_REMOTE_SHARD_CACHE_H_
