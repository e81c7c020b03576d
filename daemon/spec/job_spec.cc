#include "daemon/spec/job_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/ring_layout.h"
#include "common/status_macros.h"
#include "common/vocabulary_wire.h"
#include "daemon/remote/remote_url.h"
#include "daemon/spec/fields_proto.h"
#include "daemon/spec/masks_proto.h"
#include "daemon/spec/pipeline_proto.h"
#include "daemon/spec/views_proto.h"

namespace stoker {
namespace {

absl::Status OutOfRange(absl::string_view field, uint64_t value, uint64_t lo,
                        uint64_t hi) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " must be in [", lo, ", ", hi, "], got ", value));
}

absl::StatusOr<OnError> ParseOnError(v1::OnError value) {
  if (std::optional<OnError> known = FromWire(value)) return *known;
  return absl::InvalidArgumentError(
      absl::StrCat("on_error: unknown value ", value,
                   " (expected ON_ERROR_REPLACE or ON_ERROR_FAIL)"));
}

absl::StatusOr<SharingConfig> ParseSharing(const v1::SharingSpec& spec,
                                           uint32_t slots) {
  SharingConfig sharing;
  const std::optional<ConsumerMode> mode = FromWire(spec.mode());
  if (!mode) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharing.mode: unknown value ", spec.mode(),
                     " (expected EXCLUSIVE, BROADCAST or PARTITION)"));
  }
  sharing.mode = *mode;
  const std::optional<LagPolicy> on_lag = FromWire(spec.on_lag());
  if (!on_lag) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharing.on_lag: unknown value ", spec.on_lag(),
                     " (expected DETACH or SKIP)"));
  }
  sharing.on_lag = *on_lag;
  if (sharing.mode != ConsumerMode::kBroadcast) {
    if (spec.max_lag() != 0 || spec.min_consumers() > 1 ||
        spec.on_lag() != v1::LAG_POLICY_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          "sharing.max_lag, on_lag and min_consumers apply to broadcast only");
    }
    return sharing;
  }
  if (slots < 2) {
    return absl::InvalidArgumentError(
        "sharing.mode BROADCAST needs slots >= 2 (a consumer may lag behind "
        "another by at least one batch)");
  }
  sharing.max_lag = spec.max_lag() == 0 ? slots - 1 : spec.max_lag();
  if (sharing.max_lag > slots - 1) {
    return OutOfRange("sharing.max_lag", sharing.max_lag, 1, slots - 1);
  }
  if (spec.min_consumers() > kMaxConsumersPerJob) {
    return OutOfRange("sharing.min_consumers", spec.min_consumers(), 0,
                      kMaxConsumersPerJob);
  }
  sharing.min_consumers = std::max<uint32_t>(spec.min_consumers(), 1);
  return sharing;
}

absl::Status CheckDatasetPath(absl::string_view field, const std::string& path,
                              bool absolute) {
  if (path.size() > kMaxPathBytes) {
    return OutOfRange(absl::StrCat(field, " length"), path.size(), 1,
                      kMaxPathBytes);
  }
  if (path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(field, " holds a NUL byte"));
  }
  if (absolute && !path.empty() && !path.starts_with('/')) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " '", path, "' is not an absolute path"));
  }
  return absl::OkStatus();
}

absl::Status ParseDataset(const v1::DatasetSpec& spec, JobConfig* config) {
  const int named = int(!spec.path().empty()) + int(spec.shards_size() > 0) +
                    int(!spec.manifest().empty());
  if (named != 1) {
    return absl::InvalidArgumentError(
        named == 0 ? "dataset is empty: set dataset.path (an ImageFolder), "
                     "dataset.shards or dataset.manifest"
                   : "dataset names more than one of path, shards and "
                     "manifest; name one");
  }
  if (!spec.label_field().empty() && spec.shards_size() == 0) {
    return absl::InvalidArgumentError(
        "dataset.label_field applies to shards only");
  }
  if (spec.label_field().size() > kMaxLabelFieldBytes) {
    return OutOfRange("dataset.label_field length", spec.label_field().size(),
                      0, kMaxLabelFieldBytes);
  }
  if (spec.shards_size() > int(kMaxShardPatterns)) {
    return OutOfRange("dataset.shards size", spec.shards_size(), 1,
                      kMaxShardPatterns);
  }
  const bool remote = spec.shards_size() > 0 && IsRemoteShard(spec.shards(0));
  for (int i = 0; i < spec.shards_size(); ++i) {
    const std::string field = absl::StrCat("dataset.shards[", i, "]");
    if (IsRemoteShard(spec.shards(i)) != remote) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " '", spec.shards(i),
          "': a dataset's shards are all local paths or all remote URLs"));
    }
    STOKER_RETURN_IF_ERROR(CheckDatasetPath(field, spec.shards(i), !remote));
    if (remote) STOKER_RETURN_IF_ERROR(CheckRemoteName(field, spec.shards(i)));
  }
  STOKER_RETURN_IF_ERROR(
      CheckDatasetPath("dataset.manifest", spec.manifest(), true));
  STOKER_RETURN_IF_ERROR(CheckDatasetPath("dataset.path", spec.path(), false));
  config->dataset_kind = spec.shards_size() > 0    ? DatasetKind::kTarShards
                         : spec.manifest().empty() ? DatasetKind::kImageFolder
                                                   : DatasetKind::kManifest;
  config->dataset_path =
      spec.manifest().empty() ? spec.path() : spec.manifest();
  config->shards.assign(spec.shards().begin(), spec.shards().end());
  config->label_field = spec.label_field();
  if ((spec.has_streaming() || spec.shuffle_window() != 0) && !remote) {
    return absl::InvalidArgumentError(
        "dataset.streaming and dataset.shuffle_window apply to remote shards "
        "only (s3:// or http(s)://)");
  }
  if (spec.shuffle_window() > kMaxShuffleWindow) {
    return OutOfRange("dataset.shuffle_window", spec.shuffle_window(), 1,
                      kMaxShuffleWindow);
  }
  if (spec.has_streaming()) config->streaming = spec.streaming();
  config->shuffle_window = spec.shuffle_window();
  return absl::OkStatus();
}

absl::StatusOr<Sharding> ParseSharding(const v1::JobSpec& spec) {
  const uint32_t world = spec.world_size() == 0 ? 1 : spec.world_size();
  if (world > kMaxWorldSize) {
    return OutOfRange("world_size", world, 1, kMaxWorldSize);
  }
  if (spec.rank() >= world) {
    return OutOfRange("rank", spec.rank(), 0, world - 1);
  }
  const uint32_t reps =
      spec.repeated_augmentations() == 0 ? 1 : spec.repeated_augmentations();
  if (reps > kMaxRepetitions) {
    return OutOfRange("repeated_augmentations", reps, 0, kMaxRepetitions);
  }
  return Sharding{spec.rank(), world, spec.shard_drop_last(), reps};
}

}  // namespace

absl::Status CheckSlotBytes(const JobConfig& config) {
  const uint64_t slot_bytes = SlotLayoutFor(config).slot_bytes;
  if (slot_bytes <= kMaxSlotBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "batch_size x (image size x 3 x dtype size",
      config.views.empty() ? "" : ", summed over the views",
      config.named_fields ? " + each bytes field's largest value" : "", ") = ",
      slot_bytes, " bytes per slot, above the limit of ", kMaxSlotBytes));
}

absl::StatusOr<JobConfig> ValidateJobSpec(const v1::JobSpec& spec) {
  JobConfig config;
  STOKER_RETURN_IF_ERROR(ParseDataset(spec.dataset(), &config));
  if (spec.name().size() > kMaxNameBytes) {
    return OutOfRange("name length", spec.name().size(), 0, kMaxNameBytes);
  }
  config.name = spec.name();
  if (spec.batch_size() < 1 || spec.batch_size() > kMaxBatchSize) {
    return OutOfRange("batch_size", spec.batch_size(), 1, kMaxBatchSize);
  }
  config.batch_size = spec.batch_size();
  if (spec.slots() < 1 || spec.slots() > kMaxSlots) {
    return OutOfRange("slots", spec.slots(), 1, kMaxSlots);
  }
  config.slots = spec.slots();
  STOKER_ASSIGN_OR_RETURN(config.views, ParseViews(spec));
  if (config.views.empty()) {
    STOKER_ASSIGN_OR_RETURN(config.pipeline, ParsePipeline(spec));
  } else {
    config.pipeline = config.views[0];
  }
  STOKER_RETURN_IF_ERROR(ParseFields(spec, &config));
  STOKER_RETURN_IF_ERROR(ParseMasks(spec, &config));
  STOKER_RETURN_IF_ERROR(CheckViewNames(config));
  STOKER_RETURN_IF_ERROR(CheckSlotBytes(config));
  auto on_error = ParseOnError(spec.on_error());
  if (!on_error.ok()) return on_error.status();
  config.on_error = *on_error;
  auto sharding = ParseSharding(spec);
  if (!sharding.ok()) return sharding.status();
  config.sharding = *sharding;
  auto sharing = ParseSharing(spec.sharing(), config.slots);
  if (!sharing.ok()) return sharing.status();
  config.sharing = *sharing;
  if (spec.weight() > kMaxWeight) {
    return OutOfRange("weight", spec.weight(), 0, kMaxWeight);
  }
  config.weight = std::max<uint32_t>(spec.weight(), 1);
  if (spec.access_group().size() > kMaxGroupBytes) {
    return OutOfRange("access_group length", spec.access_group().size(), 0,
                      kMaxGroupBytes);
  }
  config.access_group = spec.access_group();
  config.start_epoch = spec.start_epoch();
  config.start_batch = spec.start_batch();
  config.seed = spec.seed();
  config.shuffle = spec.has_shuffle() ? spec.shuffle() : true;
  config.drop_last = spec.drop_last();
  config.epochs = spec.epochs();
  return config;
}

v1::JobSpec EffectiveSpec(const JobConfig& config) {
  v1::JobSpec spec;
  v1::DatasetSpec* dataset = spec.mutable_dataset();
  switch (config.dataset_kind) {
    case DatasetKind::kImageFolder:
      dataset->set_path(config.dataset_path);
      break;
    case DatasetKind::kManifest:
      dataset->set_manifest(config.dataset_path);
      break;
    case DatasetKind::kTarShards:
      for (const std::string& shard : config.shards) dataset->add_shards(shard);
      dataset->set_label_field(config.label_field);
      if (config.streaming) dataset->set_streaming(*config.streaming);
      dataset->set_shuffle_window(config.shuffle_window);
      break;
  }
  spec.set_batch_size(config.batch_size);
  spec.set_slots(config.slots);
  PipelineToProto(config.pipeline, &spec);
  ViewsToProto(config.views, &spec);
  FieldsToProto(config, &spec);
  MasksToProto(config, &spec);
  spec.set_seed(config.seed);
  spec.set_shuffle(config.shuffle);
  spec.set_drop_last(config.drop_last);
  spec.set_epochs(config.epochs);
  spec.set_on_error(ToWire(config.on_error));
  spec.set_name(config.name);
  spec.set_rank(config.sharding.rank);
  spec.set_world_size(config.sharding.world_size);
  spec.set_shard_drop_last(config.sharding.drop_tail);
  spec.set_repeated_augmentations(config.sharding.repetitions);
  spec.set_start_epoch(config.start_epoch);
  spec.set_start_batch(config.start_batch);
  v1::SharingSpec* sharing = spec.mutable_sharing();
  sharing->set_mode(ToWire(config.sharing.mode));
  if (config.sharing.mode == ConsumerMode::kBroadcast) {
    sharing->set_max_lag(config.sharing.max_lag);
    sharing->set_on_lag(ToWire(config.sharing.on_lag));
    sharing->set_min_consumers(config.sharing.min_consumers);
  }
  spec.set_weight(config.weight);
  spec.set_access_group(config.access_group);
  return spec;
}

}  // namespace stoker
