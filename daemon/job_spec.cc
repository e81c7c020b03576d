#include "daemon/job_spec.h"

#include "absl/strings/str_cat.h"
#include "common/ring_layout.h"
#include "daemon/pipeline_proto.h"

namespace stoker {
namespace {

absl::Status OutOfRange(absl::string_view field, uint64_t value, uint64_t lo,
                        uint64_t hi) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, " must be in [", lo, ", ", hi, "], got ", value));
}

absl::StatusOr<OnErrorPolicy> ParseOnError(int value) {
  switch (value) {
    case v1::ON_ERROR_UNSPECIFIED:
    case v1::ON_ERROR_REPLACE:
      return OnErrorPolicy::kReplace;
    case v1::ON_ERROR_FAIL:
      return OnErrorPolicy::kFail;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "on_error: unknown value ", value,
          " (expected ON_ERROR_REPLACE or ON_ERROR_FAIL)"));
  }
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
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size x image size x 3 x dtype size = ", slot_bytes,
        " bytes per slot, above the limit of ", kMaxSlotBytes));
  }
  auto on_error = ParseOnError(spec.on_error());
  if (!on_error.ok()) return on_error.status();
  config.on_error = *on_error;
  const uint32_t world = spec.world_size() == 0 ? 1 : spec.world_size();
  if (world > kMaxWorldSize) {
    return OutOfRange("world_size", world, 1, kMaxWorldSize);
  }
  if (spec.rank() >= world) {
    return OutOfRange("rank", spec.rank(), 0, world - 1);
  }
  config.sharding = {spec.rank(), world, spec.shard_drop_last()};
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
  spec.set_on_error(config.on_error == OnErrorPolicy::kFail
                        ? v1::ON_ERROR_FAIL
                        : v1::ON_ERROR_REPLACE);
  spec.set_name(config.name);
  spec.set_rank(config.sharding.rank);
  spec.set_world_size(config.sharding.world_size);
  spec.set_shard_drop_last(config.sharding.drop_tail);
  spec.set_start_epoch(config.start_epoch);
  spec.set_start_batch(config.start_batch);
  return spec;
}

}  // namespace stoker
