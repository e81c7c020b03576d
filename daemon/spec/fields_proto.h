// A JobSpec's named fields (fields, missing, max_field_bytes) to and from
// JobConfig, with their checks: every error is INVALID_ARGUMENT naming the
// field at fault.
#ifndef STOKER_DAEMON_SPEC_FIELDS_PROTO_H_
#define STOKER_DAEMON_SPEC_FIELDS_PROTO_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "daemon/spec/job_config.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

inline constexpr size_t kMaxFields = 16;
inline constexpr size_t kMaxFieldNameBytes = 128;
inline constexpr size_t kMaxFieldSources = 16;
inline constexpr size_t kMaxFieldSourceBytes = 64;

// Reads spec.fields (after the dataset: fields apply to tar shards and
// manifests), choosing each field's kind where the spec leaves it to its
// source (common/image_suffixes.h; a manifest's "path" column). A job has
// exactly one image field for now: several (views, masks) and none are
// refused, saying what is supported.
absl::Status ParseFields(const v1::JobSpec& spec, JobConfig* config);

// The fields as the daemon applies them: each field's kind chosen,
// max_field_bytes the job's bound.
void FieldsToProto(const JobConfig& config, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_FIELDS_PROTO_H_
