// Validation of a CreateJob request's JobSpec: every field is checked and
// bounded before anything is allocated, and each error names its field.
#ifndef STOKER_DAEMON_SPEC_JOB_SPEC_H_
#define STOKER_DAEMON_SPEC_JOB_SPEC_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "daemon/spec/job_config.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

inline constexpr uint32_t kMaxBatchSize = 4096;
inline constexpr uint32_t kMaxSlots = 256;
inline constexpr uint64_t kMaxSlotBytes = uint64_t{2} << 30;
inline constexpr size_t kMaxNameBytes = 128;
inline constexpr uint32_t kMaxWorldSize = 1 << 16;
// JobSpec.repeated_augmentations at most.
inline constexpr uint32_t kMaxRepetitions = 16;
inline constexpr size_t kMaxPathBytes = 4096;
inline constexpr size_t kMaxShardPatterns = 4096;
// A streamed job's shuffle window, in shards; 0 takes the default.
inline constexpr uint32_t kMaxShuffleWindow = 4096;
inline constexpr uint32_t kDefaultShuffleWindow = 16;
inline constexpr size_t kMaxLabelFieldBytes = 256;
inline constexpr size_t kMaxGroupBytes = 64;
inline constexpr uint32_t kMaxWeight = 100;

// INVALID_ARGUMENT naming the field for anything out of range or unknown.
// The dataset itself is not looked at here (see ScanImageFolder).
absl::StatusOr<JobConfig> ValidateJobSpec(const v1::JobSpec& spec);

// INVALID_ARGUMENT when one slot of the job would pass kMaxSlotBytes.
absl::Status CheckSlotBytes(const JobConfig& config);

// The spec as the daemon applies it (defaults filled in), for Job replies.
v1::JobSpec EffectiveSpec(const JobConfig& config);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_JOB_SPEC_H_
