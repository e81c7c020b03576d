// A job's label mask (a FIELD_KIND_MASK field, JobSpec.mask_fill): its
// checks against the rest of the job, and back. A mask follows the image's
// geometry exactly, so ops whose geometry it cannot follow are refused by
// name: views, fast_resample, the automatic augmentations (their warps are
// drawn per op) and a RandomChoice among geometric ops.
#ifndef STOKER_DAEMON_SPEC_MASKS_PROTO_H_
#define STOKER_DAEMON_SPEC_MASKS_PROTO_H_

#include "absl/status/status.h"
#include "daemon/spec/job_config.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// After ParseFields: at most one mask, beside the image; mask_fill in
// [0, 255] and only with a mask. INVALID_ARGUMENT says what to change.
absl::Status ParseMasks(const v1::JobSpec& spec, JobConfig* config);

// mask_fill, written where the job has a mask.
void MasksToProto(const JobConfig& config, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_MASKS_PROTO_H_
