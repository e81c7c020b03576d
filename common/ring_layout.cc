#include "common/ring_layout.h"

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

constexpr uint64_t RoundUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace

SlotLayout ComputeSlotLayout(uint32_t batch_size,
                             const std::vector<SlotTensorSpec>& tensors) {
  SlotLayout layout;
  uint64_t end = 0;
  for (const SlotTensorSpec& spec : tensors) {
    SlotTensor t;
    t.offset = RoundUp(end, kTensorAlignment);
    t.row_bytes = spec.row_bytes;
    t.bytes = uint64_t{batch_size} * spec.row_bytes;
    t.variable = spec.variable;
    end = t.offset + t.bytes;
    if (spec.variable) {
      t.lengths_offset = RoundUp(end, kTensorAlignment);
      end = t.lengths_offset + uint64_t{batch_size} * sizeof(int64_t);
    }
    layout.tensors.push_back(t);
  }
  layout.indices_offset = RoundUp(end, kTensorAlignment);
  layout.indices_bytes = uint64_t{batch_size} * sizeof(int64_t);
  layout.slot_bytes =
      RoundUp(layout.indices_offset + layout.indices_bytes, kPageBytes);
  return layout;
}

RingGeometry ComputeRingGeometry(uint32_t slot_count, const SlotLayout& slot) {
  RingGeometry geometry;
  geometry.slot_count = slot_count;
  geometry.slot = slot;
  geometry.slot_headers_offset = RoundUp(sizeof(RingHeader), kPageBytes);
  geometry.slots_offset = RoundUp(
      geometry.slot_headers_offset + uint64_t{slot_count} * sizeof(SlotHeader),
      kPageBytes);
  geometry.segment_bytes =
      geometry.slots_offset + uint64_t{slot_count} * slot.slot_bytes;
  return geometry;
}

void InitRingHeader(const RingGeometry& geometry, RingHeader* header) {
  header->magic = kRingMagic;
  header->version = kRingVersion;
  header->slot_count = geometry.slot_count;
  header->header_bytes = sizeof(RingHeader);
  header->slot_header_bytes = sizeof(SlotHeader);
  header->slot_headers_offset = geometry.slot_headers_offset;
  header->slots_offset = geometry.slots_offset;
  header->slot_bytes = geometry.slot.slot_bytes;
  header->segment_bytes = geometry.segment_bytes;
}

absl::Status ValidateRingHeader(const RingHeader& header,
                                uint64_t mapped_bytes) {
  if (header.magic != kRingMagic) {
    return absl::FailedPreconditionError(
        "shared-memory segment is not a stoker ring (bad magic)");
  }
  if (header.version != kRingVersion ||
      header.header_bytes != sizeof(RingHeader) ||
      header.slot_header_bytes != sizeof(SlotHeader)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ring layout version ", header.version, " is not the version ",
        kRingVersion, " this client understands; upgrade the client SDK"));
  }
  const uint64_t headers_end = header.slot_headers_offset +
                               uint64_t{header.slot_count} * sizeof(SlotHeader);
  const uint64_t slots_end =
      header.slots_offset + uint64_t{header.slot_count} * header.slot_bytes;
  if (header.segment_bytes > mapped_bytes ||
      headers_end > header.slots_offset || slots_end > header.segment_bytes) {
    return absl::FailedPreconditionError(
        absl::StrCat("ring header describes ", header.segment_bytes,
                     " bytes but the segment maps ", mapped_bytes));
  }
  return absl::OkStatus();
}

}  // namespace stoker
