#include "daemon/datasets/shard_counts.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "daemon/datasets/tar_members.h"
#include "daemon/datasets/webdataset.h"
#include "daemon/os/fnv1a.h"
#include "daemon/os/read_at.h"

namespace stoker {
namespace {

using Infos = std::vector<std::optional<ShardInfo>>;
using Parsed = absl::flat_hash_map<std::string, ShardInfo>;

// An index file or sizes.json may hold this much.
constexpr uint64_t kMaxListBytes = uint64_t{256} << 20;

// The first `size` bytes of `fd`; "" if it cannot give them (what parses
// it then refuses).
std::string ReadAll(int fd, uint64_t size) {
  std::string text(size, '\0');
  if (!ReadAt(fd, reinterpret_cast<uint8_t*>(text.data()), size, 0)) {
    text.clear();
  }
  return text;
}

// A small remote file's text; nullopt when the store has none this job
// may read (404 or 403): the counts then come from elsewhere.
absl::StatusOr<std::optional<std::string>> FetchList(
    ObjectStore& store, const std::string& name, const FetchPolicy& policy) {
  absl::StatusOr<ObjectVersion> version = store.Probe(name, policy);
  if (absl::IsNotFound(version.status()) ||
      absl::IsPermissionDenied(version.status())) {
    return std::nullopt;
  }
  if (!version.ok()) return version.status();
  if (version->size > kMaxListBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is larger than ", kMaxListBytes >> 20, " MiB"));
  }
  UniqueFd fd(::memfd_create("stoker-shard-list", MFD_CLOEXEC));
  if (!fd) return absl::InternalError("memfd_create failed");
  STOKER_RETURN_IF_ERROR(store.Get(name, *version, fd.get(), policy));
  return ReadAll(fd.get(), version->size);
}

std::string KeptPath(const ShardCountsSource& source, absl::string_view dir) {
  return absl::StrCat(source.counts_dir, "/", source.user, "-",
                      absl::Hex(Fnv1a(dir), absl::kZeroPad16), ".tsv");
}

// Fills the shards of `wanted` (indexes into names) that `parsed` holds;
// returns how many.
uint64_t Fill(const Parsed& parsed, const std::vector<std::string>& names,
              const std::vector<size_t>& wanted, Infos* infos) {
  uint64_t filled = 0;
  for (size_t i : wanted) {
    if ((*infos)[i]) continue;
    if (auto it = parsed.find(names[i]); it != parsed.end()) {
      (*infos)[i] = it->second;
      ++filled;
    }
  }
  return filled;
}

// Counts kept by an earlier scan; none when there are none or they do not
// parse (a scan then writes them anew).
Parsed ReadKept(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return Parsed();
  return ParseShardIndex(ReadAll(fd.get(), st.st_size), path)
      .value_or(Parsed());
}

// Adds the counts of `wanted` to those kept at `path` (a temporary file
// renamed over it).
void Keep(const std::string& path, const std::vector<std::string>& names,
          const std::vector<size_t>& wanted, const Infos& infos) {
  Parsed kept = ReadKept(path);
  for (size_t i : wanted) {
    if (infos[i]) kept[names[i]] = *infos[i];
  }
  std::string text = absl::StrCat(kShardIndexHeader, "\n");
  for (const auto& [name, info] : kept) {
    absl::StrAppend(&text, ShardIndexLine(name, info), "\n");
  }
  // Its own temporary file: two jobs of one user may scan at once.
  static std::atomic<uint64_t> serial{0};
  const std::string partial =
      absl::StrCat(path, ".partial-", ::getpid(), "-", serial.fetch_add(1));
  UniqueFd fd(::open(partial.c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                     0600));
  if (fd &&
      ::write(fd.get(), text.data(), text.size()) == ssize_t(text.size())) {
    ::rename(partial.c_str(), path.c_str());
  } else {
    ::unlink(partial.c_str());
  }
}

// Counts `missing` shards, `parallel` at once; the first failure stops
// the others.
absl::Status Scan(const std::vector<std::string>& names,
                  const std::vector<size_t>& missing,
                  const ShardCountsSource& source, Infos* infos) {
  ParallelFor parallel;
  FetchPolicy policy = source.fetch;
  policy.cancelled = [&] {
    return parallel.stopped() ||
           (source.fetch.cancelled && source.fetch.cancelled());
  };
  return parallel.Run(
      missing.size(), source.parallel, [&](size_t k) -> absl::Status {
        const size_t i = missing[k];
        STOKER_ASSIGN_OR_RETURN(
            (*infos)[i], CountRemoteShard(*source.store, names[i], policy,
                                          source.scratch_dir));
        return absl::OkStatus();
      });
}

// The counts of one directory's shards from the files beside them and
// the kept ones; returns the shards still unknown.
absl::StatusOr<std::vector<size_t>> FromLists(
    const std::string& dir, const std::vector<size_t>& wanted,
    const std::vector<std::string>& names, const ShardCountsSource& source,
    Infos* infos, CountsTally* tally) {
  const std::string files[] = {ResolveAgainst(dir, kShardIndexFile),
                               ResolveAgainst(dir, kSizesJsonFile)};
  uint64_t* counted[] = {&tally->index_file, &tally->sizes_json};
  for (int f = 0; f < 2; ++f) {
    STOKER_ASSIGN_OR_RETURN(std::optional<std::string> text,
                            FetchList(*source.store, files[f], source.fetch));
    if (!text) continue;
    STOKER_ASSIGN_OR_RETURN(Parsed parsed,
                            f == 0 ? ParseShardIndex(*text, files[f])
                                   : ParseSizesJson(*text, files[f]));
    *counted[f] += Fill(parsed, names, wanted, infos);
  }
  if (!source.counts_dir.empty()) {
    tally->kept += Fill(ReadKept(KeptPath(source, dir)), names, wanted, infos);
  }
  std::vector<size_t> missing;
  for (size_t i : wanted) {
    if (!(*infos)[i]) missing.push_back(i);
  }
  return missing;
}

}  // namespace

absl::StatusOr<ShardInfo> CountLocalShard(int fd, const std::string& name) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::InternalError(absl::StrCat("fstat of ", name, " failed"));
  }
  STOKER_ASSIGN_OR_RETURN(const std::vector<TarMember> members,
                          ReadTarMembers(fd, name));
  const uint64_t samples = CountSampleKeys(members);
  if (samples > UINT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " holds more than 2^32 samples"));
  }
  return ShardInfo{.samples = uint32_t(samples), .size = uint64_t(st.st_size)};
}

absl::StatusOr<ShardInfo> CountRemoteShard(ObjectStore& store,
                                           const std::string& name,
                                           const FetchPolicy& policy,
                                           const std::string& scratch_dir) {
  STOKER_ASSIGN_OR_RETURN(const ObjectVersion version,
                          store.Probe(name, policy));
  UniqueFd fd(
      ::open(scratch_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd) {
    return absl::InternalError(
        absl::StrCat("no temporary file in ", scratch_dir, " to count ", name));
  }
  STOKER_RETURN_IF_ERROR(store.Get(name, version, fd.get(), policy));
  STOKER_ASSIGN_OR_RETURN(ShardInfo info, CountLocalShard(fd.get(), name));
  info.version = version.version;
  return info;
}

absl::StatusOr<std::shared_ptr<const ShardTable>> LoadShardTable(
    const std::vector<std::string>& names, const ShardCountsSource& source,
    CountsTally* tally) {
  // The shards by directory, in the order the directories first appear.
  std::vector<std::string> dirs;
  absl::flat_hash_map<std::string, std::vector<size_t>> by_dir;
  for (size_t i = 0; i < names.size(); ++i) {
    auto [it, added] = by_dir.try_emplace(std::string(DirectoryOf(names[i])));
    if (added) dirs.push_back(it->first);
    it->second.push_back(i);
  }
  Infos infos(names.size());
  std::vector<size_t> missing;
  for (const std::string& dir : dirs) {
    STOKER_ASSIGN_OR_RETURN(
        std::vector<size_t> left,
        FromLists(dir, by_dir[dir], names, source, &infos, tally));
    missing.insert(missing.end(), left.begin(), left.end());
  }
  if (!missing.empty()) {
    STOKER_RETURN_IF_ERROR(Scan(names, missing, source, &infos));
    tally->scanned += missing.size();
    if (!source.counts_dir.empty()) {
      ::mkdir(source.counts_dir.c_str(), 0700);
      for (const std::string& dir : dirs) {
        Keep(KeptPath(source, dir), names, by_dir[dir], infos);
      }
    }
  }
  ShardTable::Builder table;
  for (size_t i = 0; i < names.size(); ++i) {
    STOKER_RETURN_IF_ERROR(table.Add(names[i], *infos[i]));
  }
  return table.Build();
}

}  // namespace stoker
