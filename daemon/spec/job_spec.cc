#include "daemon/spec/job_spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/ring_layout.h"
#include "common/vocabulary_wire.h"
#include "daemon/spec/pipeline_proto.h"

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

absl::StatusOr<Sharding> ParseSharding(const v1::JobSpec& spec) {
  const uint32_t world = spec.world_size() == 0 ? 1 : spec.world_size();
  if (world > kMaxWorldSize) {
    return OutOfRange("world_size", world, 1, kMaxWorldSize);
  }
  if (spec.rank() >= world) {
    return OutOfRange("rank", spec.rank(), 0, world - 1);
  }
  return Sharding{spec.rank(), world, spec.shard_drop_last()};
}

}  // namespace

absl::StatusOr<JobConfig> ValidateJobSpec(const v1::JobSpec& spec) {
  JobConfig config;
  if (spec.dataset().path().empty()) {
    return absl::InvalidArgumentError("dataset.path is empty");
  }
  if (spec.dataset().path().size() > kMaxPathBytes) {
    return OutOfRange("dataset.path length", spec.dataset().path().size(), 1,
                      kMaxPathBytes);
  }
  config.dataset_path = spec.dataset().path();
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
  auto pipeline = ParsePipeline(spec);
  if (!pipeline.ok()) return pipeline.status();
  config.pipeline = *pipeline;
  const uint64_t slot_bytes =
      ComputeSlotLayout(config.batch_size, config.pipeline.BytesPerImage())
          .slot_bytes;
  if (slot_bytes > kMaxSlotBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size x image size x 3 x dtype size = ", slot_bytes,
                     " bytes per slot, above the limit of ", kMaxSlotBytes));
  }
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
  spec.mutable_dataset()->set_path(config.dataset_path);
  spec.set_batch_size(config.batch_size);
  spec.set_slots(config.slots);
  PipelineToProto(config.pipeline, &spec);
  spec.set_seed(config.seed);
  spec.set_shuffle(config.shuffle);
  spec.set_drop_last(config.drop_last);
  spec.set_epochs(config.epochs);
  spec.set_on_error(ToWire(config.on_error));
  spec.set_name(config.name);
  spec.set_rank(config.sharding.rank);
  spec.set_world_size(config.sharding.world_size);
  spec.set_shard_drop_last(config.sharding.drop_tail);
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
