#include "daemon/spec/job_config.h"

#include "common/batch_wire.h"

namespace stoker {

std::vector<FieldConfig> ClassicFields() {
  return {{kImagesTensor, {}, FieldRole::kImage},
          {kLabelsTensor, {}, FieldRole::kLabel}};
}

SlotLayout SlotLayoutFor(const JobConfig& config) {
  std::vector<SlotTensorSpec> tensors;
  for (const FieldConfig& field : config.fields) {
    switch (field.role) {
      case FieldRole::kImage:
        tensors.push_back({config.pipeline.BytesPerImage()});
        break;
      case FieldRole::kLabel:
        tensors.push_back({sizeof(int64_t)});
        break;
      case FieldRole::kBytes:
        tensors.push_back({field.row_bytes, true});
        break;
    }
  }
  return ComputeSlotLayout(config.batch_size, tensors);
}

RingGeometry RingGeometryFor(const JobConfig& config) {
  return ComputeRingGeometry(config.slots, SlotLayoutFor(config));
}

}  // namespace stoker
