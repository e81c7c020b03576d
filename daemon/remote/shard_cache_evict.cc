// ShardCache: which entry goes when the cache needs room (see
// shard_cache.h): the unheld entry whose next use by a streamed job lies
// furthest ahead, the least recently used among those none foresees.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "daemon/os/byte_size.h"
#include "daemon/remote/shard_cache.h"

namespace stoker {

absl::Status ShardCache::MakeRoom(uint64_t size) {
  if (size > max_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("a shard of ", FormatByteSize(size),
                     " is larger than the whole shard cache (--cache_size ",
                     FormatByteSize(max_bytes_), ")"));
  }
  uint64_t evictable = 0;
  for (const auto& [key, slot] : slots_) {
    if (slot.ready && slot.holders.empty()) evictable += slot.size;
  }
  if (bytes_ - evictable + size > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the shard cache (--cache_size ", FormatByteSize(max_bytes_),
        ") has no room for ", FormatByteSize(size),
        " more: ", FormatByteSize(bytes_ - evictable),
        " are shards running jobs hold or fetches under way; a dataset's "
        "shards must fit the cache together"));
  }
  while (bytes_ + size > max_bytes_) Evict(Victim());
  return absl::OkStatus();
}

absl::flat_hash_map<std::string, ShardCache::Slot>::iterator
ShardCache::Victim() {
  auto victim = slots_.end();
  uint64_t victim_next = 0;
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    if (!it->second.ready || !it->second.holders.empty()) continue;
    uint64_t next = UINT64_MAX;
    if (!futures_.empty()) {
      const std::string identity = it->first.substr(0, it->first.find('\n'));
      for (const FutureUse* use : futures_) {
        next = std::min(next, use->NextUse(identity));
      }
    }
    if (victim == slots_.end() || next > victim_next ||
        (next == victim_next &&
         it->second.last_use < victim->second.last_use)) {
      victim = it;
      victim_next = next;
    }
  }
  return victim;
}

void ShardCache::AddFutureUse(const FutureUse* use) {
  absl::MutexLock lock(&mu_);
  futures_.push_back(use);
}

void ShardCache::RemoveFutureUse(const FutureUse* use) {
  absl::MutexLock lock(&mu_);
  std::erase(futures_, use);
}

}  // namespace stoker
