#include "daemon/spec/job_config.h"

namespace stoker {

RingGeometry RingGeometryFor(const JobConfig& config) {
  return ComputeRingGeometry(
      config.slots,
      ComputeSlotLayout(config.batch_size, config.pipeline.BytesPerImage()));
}

}  // namespace stoker
