// stokerctl index: the shard index file of a streamed dataset (see
// daemon/datasets/shard_table.h): each shard read once, headers only
// counted, as the user running it (local files with its permissions,
// s3:// with the AWS_* variables of its environment).
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "client/stokerctl/commands.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "common/unique_fd.h"
#include "daemon/datasets/brace_expand.h"
#include "daemon/datasets/shard_counts.h"
#include "daemon/datasets/shard_index.h"
#include "daemon/remote/remote_url.h"

namespace stoker::ctl {
namespace {

std::string Env(const char* name, const char* fallback = nullptr) {
  const char* value = std::getenv(name);
  if ((value == nullptr || *value == '\0') && fallback != nullptr) {
    value = std::getenv(fallback);
  }
  return value == nullptr ? "" : value;
}

// The access s3:// names are read with: the environment's, as the Python
// package reads it (a set endpoint means path-style addressing).
FetchAccess AccessFromEnvironment() {
  FetchAccess access{
      .endpoint_url = Env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
      .region = Env("AWS_REGION", "AWS_DEFAULT_REGION"),
      .access_key_id = Env("AWS_ACCESS_KEY_ID"),
      .secret_access_key = Env("AWS_SECRET_ACCESS_KEY"),
      .session_token = Env("AWS_SESSION_TOKEN")};
  access.path_style = !access.endpoint_url.empty();
  return access;
}

absl::StatusOr<ShardInfo> CountOne(ObjectStore& store,
                                   const std::string& name) {
  if (IsRemoteShard(name)) {
    return CountRemoteShard(store, name, {},
                            Env("TMPDIR").empty() ? "/tmp" : Env("TMPDIR"));
  }
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", name, ": ", std::strerror(errno)));
  }
  return CountLocalShard(fd.get(), name);
}

// Every shard's count, `parallel` at once; the first failure ends it.
absl::StatusOr<std::vector<ShardInfo>> CountAll(
    const std::vector<std::string>& names, int parallel) {
  HttpStore store(AccessFromEnvironment());
  std::vector<ShardInfo> infos(names.size());
  STOKER_RETURN_IF_ERROR(
      ParallelFor().Run(names.size(), parallel, [&](size_t i) -> absl::Status {
        STOKER_ASSIGN_OR_RETURN(infos[i], CountOne(store, names[i]));
        return absl::OkStatus();
      }));
  return infos;
}

}  // namespace

int Index(const IndexOptions& options) {
  std::vector<std::string> names;
  for (const std::string& pattern : options.shards) {
    if (absl::Status expanded = ExpandBraces(pattern, kMaxShards, &names);
        !expanded.ok()) {
      std::fprintf(stderr, "stokerctl index: %s\n",
                   std::string(expanded.message()).c_str());
      return 2;
    }
  }
  // One directory: the names are written relative to it, so the file
  // works wherever the shards are read from, once put beside them.
  std::optional<std::string> dir(std::string(DirectoryOf(names[0])));
  for (const std::string& name : names) {
    if (DirectoryOf(name) != *dir) dir.reset();
  }
  absl::StatusOr<std::vector<ShardInfo>> infos =
      CountAll(names, options.parallel);
  if (!infos.ok()) {
    std::fprintf(stderr, "stokerctl index: %s\n",
                 std::string(infos.status().message()).c_str());
    return 1;
  }
  std::string text = absl::StrCat(kShardIndexHeader, "\n");
  uint64_t samples = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string name =
        dir ? names[i].substr(dir->empty() ? 0 : dir->size() + 1) : names[i];
    absl::StrAppend(&text, ShardIndexLine(name, (*infos)[i]), "\n");
    samples += (*infos)[i].samples;
  }
  if (options.output.empty() || options.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else if (!(std::ofstream(options.output, std::ios::binary) << text)) {
    std::fprintf(stderr, "stokerctl index: cannot write %s\n",
                 options.output.c_str());
    return 1;
  }
  std::fprintf(
      stderr,
      "stokerctl index: %zu shards, %llu samples%s; put the file "
      "beside the shards as %s\n",
      names.size(), static_cast<unsigned long long>(samples),
      dir ? "" : " (full names: the shards lie in several directories)",
      kShardIndexFile);
  return 0;
}

}  // namespace stoker::ctl
