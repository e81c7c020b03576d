// The wire form of a job's views (JobSpec.views): several pipelines over
// one decode of each sample's image, validated, and back.
#ifndef STOKER_DAEMON_SPEC_VIEWS_PROTO_H_
#define STOKER_DAEMON_SPEC_VIEWS_PROTO_H_

#include <vector>

#include "absl/status/statusor.h"
#include "daemon/image/pipeline.h"
#include "daemon/spec/job_config.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// Each view's pipeline, parsed as a job's (ParsePipeline) with the job's
// reference versions and fast_resample; empty when the spec has none.
// At most kMaxViews (pipeline.h). INVALID_ARGUMENT names the view ("views[3]:
// pipeline[0]...").
absl::StatusOr<std::vector<Pipeline>> ParseViews(const v1::JobSpec& spec);

// With views, the image field's tensors are "<name>.<view>": refuses
// another field of such a name (INVALID_ARGUMENT naming it).
absl::Status CheckViewNames(const JobConfig& config);

// Writes `views` back (for Job replies); `spec` keeps no pipeline or output.
void ViewsToProto(const std::vector<Pipeline>& views, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_VIEWS_PROTO_H_
