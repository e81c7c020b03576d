#include "daemon/datasets/dataset_source.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/datasets/image_folder.h"
#include "daemon/datasets/manifest.h"
#include "daemon/datasets/shard_index.h"
#include "daemon/os/byte_size.h"
#include "daemon/remote/remote_url.h"

namespace stoker {
namespace {

// Data on this node's file systems, opened with the job owner's identity,
// its index shared by the jobs over the same data.
class LocalSource : public DatasetSource {
 public:
  explicit LocalSource(DatasetRef ref) : DatasetSource(std::move(ref)) {}
  bool ReadsAsOwner() const override { return true; }

  absl::StatusOr<std::shared_ptr<const DatasetIndex>> Index(
      const ScanLimits& limits, DatasetCache* shared) override {
    const PathPolicy& policy = PolicyOf(limits);
    STOKER_RETURN_IF_ERROR(Resolve(policy));
    const std::string key = ShareKey(ref_, policy);
    if (auto kept = shared->Find(key, policy);
        kept != nullptr && kept->size() <= limits.max_samples) {
      return kept;
    }
    STOKER_ASSIGN_OR_RETURN(auto index, Build(limits));
    return shared->Keep(key, std::move(index));
  }

 protected:
  // Paths the key depends on, resolved through the roots.
  virtual absl::Status Resolve(const PathPolicy&) { return absl::OkStatus(); }
  virtual absl::StatusOr<std::shared_ptr<const DatasetIndex>> Build(
      const ScanLimits& limits) = 0;
};

class ImageFolderSource final : public LocalSource {
 public:
  using LocalSource::LocalSource;

 private:
  absl::Status Resolve(const PathPolicy& policy) override {
    STOKER_ASSIGN_OR_RETURN(ref_.path, policy.Resolve(ref_.path));
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<const DatasetIndex>> Build(
      const ScanLimits& limits) override {
    return ScanImageFolder(ref_.path, limits);
  }
};

class ManifestSource final : public LocalSource {
 public:
  using LocalSource::LocalSource;

 private:
  absl::StatusOr<std::shared_ptr<const DatasetIndex>> Build(
      const ScanLimits& limits) override {
    return IndexManifest(ref_.path, limits, ref_.schema);
  }
};

class LocalShardsSource final : public LocalSource {
 public:
  using LocalSource::LocalSource;

 private:
  absl::StatusOr<std::shared_ptr<const DatasetIndex>> Build(
      const ScanLimits& limits) override {
    return IndexTarShards(ref_.shards, ref_.schema, limits);
  }
};

// Remote shards through the shard cache, with the job's own store: each
// job its own index, since its probes are what let it use cached copies.
class RemoteShardsSource final : public DatasetSource {
 public:
  RemoteShardsSource(DatasetRef ref, const RemoteShardSource* remote)
      : DatasetSource(std::move(ref)), remote_(remote) {}
  bool ReadsAsOwner() const override { return false; }

  absl::StatusOr<std::shared_ptr<const DatasetIndex>> Index(
      const ScanLimits& limits, DatasetCache*) override {
    if (remote_ == nullptr) {
      return absl::FailedPreconditionError(
          "remote shards need an object store");
    }
    RemoteTally tally;
    const absl::Time start = absl::Now();
    auto index =
        IndexRemoteShards(ref_.shards, ref_.schema, limits, *remote_, &tally);
    spdlog::info(
        "remote shards for uid {} on {}: {} shards, {} from the shard cache, "
        "{} fetched ({} requests, {} retries, {} resumed) in {}: {}",
        remote_->user, DatasetName(ref_), tally.shards, tally.hits,
        FormatByteSize(tally.fetch.bytes), tally.fetch.requests,
        tally.fetch.retries, tally.fetch.resumed,
        absl::FormatDuration(
            absl::Trunc(absl::Now() - start, absl::Milliseconds(1))),
        index.ok() ? "indexed" : index.status().message());
    return index;
  }

 private:
  const RemoteShardSource* const remote_;
};

}  // namespace

bool NamesRemoteShards(const DatasetRef& ref) {
  return ref.kind == DatasetKind::kTarShards && !ref.shards.empty() &&
         IsRemoteShard(ref.shards[0]);
}

std::string DatasetName(const DatasetRef& ref) {
  switch (ref.kind) {
    case DatasetKind::kTarShards:
      return ref.shards.size() == 1
                 ? absl::StrCat("shards ", ref.shards[0])
                 : absl::StrCat("shards ", ref.shards[0], " and ",
                                ref.shards.size() - 1, " more patterns");
    case DatasetKind::kManifest:
      return absl::StrCat("manifest ", ref.path);
    case DatasetKind::kImageFolder:
      break;
  }
  return ref.path;
}

std::string ShareKey(const DatasetRef& ref, const PathPolicy& policy) {
  // NUL cannot appear in a path, nor a control character in a field's
  // source, so \1 (a field) and \2 (a source) keep the parts apart. Which
  // field is the image matters to a manifest's index (a file or a text),
  // not to a shard's (members all).
  const absl::string_view nul("\0", 1);
  const bool manifest = ref.kind == DatasetKind::kManifest;
  std::string fields = ref.schema.skip_missing ? "skip" : "error";
  for (const SchemaField& field : ref.schema.fields) {
    absl::StrAppend(&fields, "\1", manifest && field.image ? "I" : "B");
    for (const std::string& source : field.source) {
      absl::StrAppend(&fields, "\2", source);
    }
  }
  return absl::StrCat(int(ref.kind), nul, ref.path, nul,
                      absl::StrJoin(ref.shards, nul), nul,
                      ref.schema.labels.json_field, nul, fields, nul,
                      absl::StrJoin(policy.roots(), nul));
}

std::unique_ptr<DatasetSource> MakeDatasetSource(
    DatasetRef ref, const RemoteShardSource* remote) {
  switch (ref.kind) {
    case DatasetKind::kTarShards:
      if (NamesRemoteShards(ref)) {
        return std::make_unique<RemoteShardsSource>(std::move(ref), remote);
      }
      return std::make_unique<LocalShardsSource>(std::move(ref));
    case DatasetKind::kManifest:
      return std::make_unique<ManifestSource>(std::move(ref));
    case DatasetKind::kImageFolder:
      break;
  }
  return std::make_unique<ImageFolderSource>(std::move(ref));
}

}  // namespace stoker
