// libFuzzer target for request validation: whatever bytes arrive as a
// CreateJobRequest, ValidateJobSpec must return a config or a status naming
// what is wrong, never crash, hang or accept something out of bounds. The
// same bytes also go through the other parsers that see client input: byte
// sizes (flags and config) and the ring socket's replies.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/fd_passing.h"
#include "common/ring_layout.h"
#include "daemon/os/byte_size.h"
#include "daemon/spec/fields_proto.h"
#include "daemon/spec/job_config.h"
#include "daemon/spec/job_spec.h"
#include "stoker/v1/loader.pb.h"

namespace {

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  stoker::v1::CreateJobRequest request;
  if (request.ParseFromArray(data, static_cast<int>(size))) {
    auto config = stoker::ValidateJobSpec(request.spec());
    if (config.ok()) {
      // Whatever passed validation is within the documented bounds, and
      // its ring's size is computed without overflow.
      Check(config->batch_size >= 1 && config->batch_size <= 4096);
      Check(config->slots >= 1 && config->slots <= 256);
      Check(config->dataset_path.size() <= stoker::kMaxPathBytes);
      Check(config->name.size() <= stoker::kMaxNameBytes);
      Check(config->access_group.size() <= stoker::kMaxGroupBytes);
      // Named fields: within their bounds, one image among them.
      Check(config->fields.size() <= stoker::kMaxFields);
      int images = 0;
      for (const stoker::FieldConfig& field : config->fields) {
        Check(field.name.size() <= stoker::kMaxFieldNameBytes);
        Check(field.source.size() <= stoker::kMaxFieldSources);
        images += field.role == stoker::FieldRole::kImage;
      }
      Check(images == 1);
      const stoker::RingGeometry geometry = stoker::RingGeometryFor(*config);
      Check(geometry.segment_bytes >= geometry.slot.slot_bytes);
      // The effective spec validates again, to the same config.
      auto again = stoker::ValidateJobSpec(stoker::EffectiveSpec(*config));
      Check(again.ok());
    } else {
      Check(!config.status().message().empty());
    }
  }
  (void)stoker::ParseByteSize(absl::string_view(text.data(), text.size()));
  (void)stoker::DecodeStatus(text);
  return 0;
}
