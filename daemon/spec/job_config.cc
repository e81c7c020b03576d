#include "daemon/spec/job_config.h"

#include "common/batch_wire.h"

namespace stoker {

std::vector<FieldConfig> ClassicFields() {
  return {{kImagesTensor, {}, FieldRole::kImage},
          {kLabelsTensor, {}, FieldRole::kLabel}};
}

size_t FirstTensor(const JobConfig& config, size_t f) {
  size_t t = 0;
  for (size_t i = 0; i < f; ++i) {
    t += config.fields[i].role == FieldRole::kImage
             ? ImagePipelines(config).size()
             : 1;
  }
  return t;
}

SlotLayout SlotLayoutFor(const JobConfig& config) {
  std::vector<SlotTensorSpec> tensors;
  for (const FieldConfig& field : config.fields) {
    switch (field.role) {
      case FieldRole::kImage:
        for (const Pipeline& p : ImagePipelines(config)) {
          tensors.push_back({p.BytesPerImage()});
        }
        break;
      case FieldRole::kLabel:
        tensors.push_back({sizeof(int64_t)});
        break;
      case FieldRole::kBytes:
        tensors.push_back({field.row_bytes, true});
        break;
      case FieldRole::kMask:
        tensors.push_back({config.pipeline.output.Pixels()});
        break;
    }
  }
  return ComputeSlotLayout(config.batch_size, tensors);
}

RingGeometry RingGeometryFor(const JobConfig& config) {
  return ComputeRingGeometry(config.slots, SlotLayoutFor(config));
}

}  // namespace stoker
