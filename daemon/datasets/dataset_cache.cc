#include "daemon/datasets/dataset_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "common/unique_fd.h"
#include "daemon/datasets/sample_file.h"

namespace stoker {

bool StampsHold(const DatasetIndex& index, const PathPolicy& policy) {
  for (const FileStamp& stamp : index.stamps()) {
    // Opened for reading: the asking user must be allowed to read it. A
    // shard or manifest is looked at before it is opened (OpenSample).
    UniqueFd fd;
    if (stamp.directory) {
      fd = UniqueFd(::open(stamp.path.c_str(),
                           O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK));
      if (!fd || !policy.CheckOpen(fd.get()).ok()) return false;
    } else {
      struct stat st;
      absl::StatusOr<UniqueFd> file = OpenSample(stamp.path, &policy, &st);
      if (!file.ok()) return false;
      fd = *std::move(file);
    }
    FileStamp now;
    if (!StampOf(fd.get(), stamp.path, stamp.directory, &now).ok() ||
        !(now == stamp)) {
      return false;
    }
  }
  return true;
}

std::shared_ptr<const DatasetIndex> DatasetCache::Find(
    const std::string& key, const PathPolicy& policy) {
  std::shared_ptr<const DatasetIndex> index;
  {
    absl::MutexLock lock(&mu_);
    auto it = kept_.find(key);
    if (it == kept_.end()) return nullptr;
    index = it->second.lock();
  }
  if (index == nullptr || !StampsHold(*index, policy)) return nullptr;
  return index;
}

std::shared_ptr<const DatasetIndex> DatasetCache::Keep(
    const std::string& key, std::shared_ptr<const DatasetIndex> index) {
  absl::MutexLock lock(&mu_);
  absl::erase_if(kept_,
                 [](const auto& entry) { return entry.second.expired(); });
  auto [it, added] = kept_.try_emplace(key, index);
  if (added) return index;
  if (auto kept = it->second.lock();
      kept != nullptr && kept->stamps() == index->stamps()) {
    return kept;
  }
  it->second = index;
  return index;
}

DatasetCache::Usage DatasetCache::usage() const {
  Usage usage;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, weak] : kept_) {
    if (auto index = weak.lock()) {
      ++usage.indexes;
      usage.bytes += index->MemoryBytes();
    }
  }
  return usage;
}

}  // namespace stoker
