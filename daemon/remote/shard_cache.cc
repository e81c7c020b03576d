#include "daemon/remote/shard_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "daemon/os/byte_size.h"
#include "daemon/os/fnv1a.h"

namespace stoker {
namespace {

constexpr char kKeyHeader[] = "stoker-shard-cache 1";
constexpr char kPartial[] = ".partial-";

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status WriteWhole(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("writing a shard cache key");
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

bool ReadSmallFile(const std::string& path, std::string* text) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return false;
  char buffer[16384];
  const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
  if (n <= 0 || n == ssize_t(sizeof(buffer))) return false;
  text->assign(buffer, static_cast<size_t>(n));
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShardCache>> ShardCache::Open(
    std::string dir, uint64_t max_bytes, uint64_t max_bytes_per_user) {
  while (dir.size() > 1 && dir.ends_with('/')) dir.pop_back();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Errno(absl::StrCat("making the shard cache ", dir));
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    return Errno(absl::StrCat("the shard cache ", dir));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the shard cache ", dir,
        " (--cache_dir) is not a directory of stokerd's own user"));
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    return Errno(absl::StrCat("making ", dir, " private"));
  }
  const std::string lock_path = dir + "/lock";
  UniqueFd lock(::open(lock_path.c_str(),
                       O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock) return Errno(absl::StrCat("opening ", lock_path));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the shard cache ", dir, " is in use by another stokerd"));
  }
  std::unique_ptr<ShardCache> cache(new ShardCache(
      std::move(dir), max_bytes, max_bytes_per_user, std::move(lock)));
  cache->Load();
  return cache;
}

ShardCache::~ShardCache() = default;

void ShardCache::Load() {
  struct Found {
    std::string key;
    Slot slot;
    int64_t mtime_ns;
  };
  std::vector<Found> found;
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(dir_.c_str())) {
    while (const dirent* entry = ::readdir(dir)) names.push_back(entry->d_name);
    ::closedir(dir);
  }
  for (const std::string& name : names) {
    if (name.starts_with(kPartial)) Remove(name);  // a fetch a crash cut
    if (!name.ends_with(".key")) continue;
    const std::string stem = name.substr(0, name.size() - 4);
    std::string text;
    struct stat st;
    const bool readable = ReadSmallFile(dir_ + "/" + name, &text);
    std::vector<std::string> lines =
        absl::StrSplit(text, absl::MaxSplits('\n', 2));
    uint64_t size = 0;
    if (!readable || lines.size() != 3 || lines[0] != kKeyHeader ||
        !absl::SimpleAtoi(lines[1], &size) ||
        ::lstat((dir_ + "/" + stem + ".tar").c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode) || uint64_t(st.st_size) != size) {
      Remove(stem);
      continue;
    }
    found.push_back(
        {lines[2], Slot{stem, size, 0, true, nullptr, {}},
         int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
  }
  // A shard without its key (a crash between the two renames) is dropped.
  absl::flat_hash_set<std::string> kept;
  for (const Found& f : found) kept.insert(f.slot.name);
  for (const std::string& name : names) {
    if (name.ends_with(".tar") &&
        !kept.contains(name.substr(0, name.size() - 4))) {
      Remove(name.substr(0, name.size() - 4));
    }
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return a.mtime_ns < b.mtime_ns;
  });
  absl::MutexLock lock(&mu_);
  for (Found& f : found) {
    f.slot.last_use = ++uses_;
    bytes_ += f.slot.size;
    names_.insert(f.slot.name);
    slots_.emplace(std::move(f.key), std::move(f.slot));
  }
  (void)MakeRoom(0);  // a bound lowered since the last run
}

void ShardCache::Remove(const std::string& name) {
  if (name.starts_with(kPartial)) {
    ::unlink((dir_ + "/" + name).c_str());
    return;
  }
  ::unlink((dir_ + "/" + name + ".tar").c_str());
  ::unlink((dir_ + "/" + name + ".key").c_str());
}

void ShardCache::Evict(absl::flat_hash_map<std::string, Slot>::iterator it) {
  Remove(it->second.name);
  bytes_ -= it->second.size;
  names_.erase(it->second.name);
  ++evictions_;
  slots_.erase(it);
}

bool ShardCache::WaitForRoom(uid_t user, uint64_t size, absl::Time until,
                             const std::function<bool()>& give_up) {
  // (A shard larger than the whole share never fits: no wait.)
  if (!absl::IsResourceExhausted(CheckUser(user, size)) ||
      size > max_bytes_per_user_ || absl::Now() >= until ||
      (give_up && give_up())) {
    return false;
  }
  changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  return true;
}

absl::Status ShardCache::CheckUser(uid_t user, uint64_t size) const {
  const auto it = by_user_.find(user);
  const uint64_t held = it == by_user_.end() ? 0 : it->second;
  if (held + size <= max_bytes_per_user_) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("uid ", user, "'s jobs hold or fetch ", FormatByteSize(held),
                   " of the shard cache; a shard of ", FormatByteSize(size),
                   " more would pass the ", FormatByteSize(max_bytes_per_user_),
                   " one user may hold (--cache_size_per_user)"));
}

std::string ShardCache::NewName(const std::string& key) {
  const std::string base =
      absl::StrFormat("%016x", Fnv1a(key));  // collisions get a suffix
  for (int n = 0;; ++n) {
    std::string name = n == 0 ? base : absl::StrCat(base, "-", n);
    if (!names_.contains(name)) return name;
  }
}

absl::StatusOr<std::shared_ptr<const ShardCache::Entry>> ShardCache::Hold(
    const std::string& key, uid_t user, Slot* slot) {
  if (slot->fd == nullptr) {
    const std::string path = absl::StrCat(dir_, "/", slot->name, ".tar");
    auto fd = std::make_shared<UniqueFd>(
        ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!*fd) return Errno(absl::StrCat("opening the cached shard ", path));
    slot->fd = std::move(fd);
  }
  ::futimens(slot->fd->get(), nullptr);  // its LRU place, after restarts
  slot->last_use = ++uses_;
  if (slot->holders[user]++ == 0) by_user_[user] += slot->size;
  return std::shared_ptr<const Entry>(
      new Entry(this, key, user, slot->fd, slot->size));
}

absl::StatusOr<std::shared_ptr<const ShardCache::Entry>> ShardCache::Get(
    const std::string& key, uint64_t size, uid_t user, const Fill& fill,
    const std::function<bool()>& give_up, bool* hit,
    const GetOptions& options) {
  std::string name;
  {
    absl::MutexLock lock(&mu_);
    // The user's share may free up as their own jobs let entries go.
    const absl::Time until = options.room_until;
    while (true) {
      auto it = slots_.find(key);
      if (it == slots_.end()) {
        if (WaitForRoom(user, size, until, give_up)) continue;
        break;
      }
      if (it->second.ready) {
        const bool holds = it->second.holders.contains(user);
        if (!holds && WaitForRoom(user, size, until, give_up)) continue;
        if (!holds) STOKER_RETURN_IF_ERROR(CheckUser(user, size));
        ++hits_;
        *hit = true;
        return Hold(key, user, &it->second);
      }
      // Another job is fetching it.
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
      if (give_up && give_up()) {
        return absl::CancelledError(
            "stopped waiting for another job's fetch of the same shard");
      }
    }
    // The whole cache's bound first: a shard past it never fits, whatever
    // one user's share.
    if (size > max_bytes_) return MakeRoom(size);
    STOKER_RETURN_IF_ERROR(CheckUser(user, size));
    STOKER_RETURN_IF_ERROR(MakeRoom(size));
    ++misses_;
    *hit = false;
    name = NewName(key);
    names_.insert(name);
    slots_[key] = Slot{name, size, 0, false, nullptr, {}};
    bytes_ += size;
    by_user_[user] += size;  // while it is fetched
  }
  const absl::Status fetched = Fetch(key, name, size, fill, options.durable);
  absl::MutexLock lock(&mu_);
  by_user_[user] -= size;
  changed_.SignalAll();
  auto it = slots_.find(key);
  if (!fetched.ok()) {
    bytes_ -= size;
    names_.erase(name);
    slots_.erase(it);
    return fetched;
  }
  it->second.ready = true;
  fetched_bytes_ += size;
  return Hold(key, user, &it->second);
}

absl::Status ShardCache::Fetch(const std::string& key, const std::string& name,
                               uint64_t size, const Fill& fill, bool durable) {
  const std::string partial = absl::StrCat(dir_, "/", kPartial, name);
  UniqueFd fd(::open(partial.c_str(),
                     O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                     0600));
  if (!fd) return Errno(absl::StrCat("making ", partial));
  absl::Status status = absl::OkStatus();
  if (const int error = ::posix_fallocate(fd.get(), 0, off_t(size));
      error != 0 && error != EOPNOTSUPP && error != EINVAL) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("no room on the shard cache's disk for a shard of ",
                     FormatByteSize(size), ": ", std::strerror(error)));
  }
  if (status.ok()) status = fill(fd.get());
  // Synced before its key is written: a key names a whole shard, even after
  // a power loss. Without a key, the next run removes the file.
  if (durable && status.ok() && ::fdatasync(fd.get()) != 0) {
    status = Errno(absl::StrCat("syncing ", partial));
  }
  const std::string key_path = absl::StrCat(dir_, "/", name, ".key");
  if (durable && status.ok()) {
    const std::string key_partial = partial + ".key";
    UniqueFd key_fd(
        ::open(key_partial.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    status = key_fd ? WriteWhole(key_fd.get(), absl::StrCat(kKeyHeader, "\n",
                                                            size, "\n", key))
                    : Errno(absl::StrCat("making ", key_partial));
    if (status.ok() && ::rename(key_partial.c_str(), key_path.c_str()) != 0) {
      status = Errno(absl::StrCat("placing ", key_path));
    }
    ::unlink(key_partial.c_str());
  }
  const std::string tar_path = absl::StrCat(dir_, "/", name, ".tar");
  if (status.ok() && ::rename(partial.c_str(), tar_path.c_str()) != 0) {
    status = Errno(absl::StrCat("placing ", tar_path));
  }
  if (!status.ok()) {
    ::unlink(partial.c_str());
    ::unlink(key_path.c_str());
  }
  return status;
}

void ShardCache::Release(const std::string& key, uid_t user) {
  absl::MutexLock lock(&mu_);
  auto it = slots_.find(key);
  if (it == slots_.end()) return;
  Slot& slot = it->second;
  auto holder = slot.holders.find(user);
  if (holder == slot.holders.end() || --holder->second > 0) return;
  slot.holders.erase(holder);
  if (slot.holders.empty()) slot.fd.reset();  // closed with the last copy
  auto held = by_user_.find(user);
  if (held == by_user_.end()) return;
  held->second -= std::min(held->second, slot.size);
  if (held->second == 0) by_user_.erase(held);
  changed_.SignalAll();  // a Get may wait for the user's room
}

ShardCache::Entry::~Entry() { cache_->Release(key_, user_); }

ShardCache::Usage ShardCache::usage() const {
  absl::MutexLock lock(&mu_);
  Usage usage{.files = 0,
              .bytes = bytes_,
              .max_bytes = max_bytes_,
              .hits = hits_,
              .misses = misses_,
              .fetched_bytes = fetched_bytes_,
              .evictions = evictions_};
  for (const auto& [key, slot] : slots_) {
    if (slot.ready) ++usage.files;
    if (!slot.holders.empty()) usage.held_bytes += slot.size;
  }
  return usage;
}

}  // namespace stoker
