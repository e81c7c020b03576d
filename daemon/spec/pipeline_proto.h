// The wire form of a Pipeline: validation of a JobSpec's ops and output,
// and back.
#ifndef STOKER_DAEMON_SPEC_PIPELINE_PROTO_H_
#define STOKER_DAEMON_SPEC_PIPELINE_PROTO_H_

#include "absl/status/statusor.h"
#include "daemon/image/pipeline.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// Validates spec.pipeline() together with spec.output(). INVALID_ARGUMENT
// naming the op ("pipeline[1].center_crop.height ...") or field.
absl::StatusOr<Pipeline> ParsePipeline(const v1::JobSpec& spec);

// Writes `pipeline` back as ops and output (for Job replies).
void PipelineToProto(const Pipeline& pipeline, v1::JobSpec* spec);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_PIPELINE_PROTO_H_
