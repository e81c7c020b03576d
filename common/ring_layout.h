// The in-memory layout of a job's shared-memory ring, shared by stokerd (the
// only writer) and the client SDK (read-only mappers).
//
//   offset 0                 RingHeader
//   slot_headers_offset      SlotHeader[slot_count], 64-byte aligned each
//   slots_offset             slot 0 data, slot 1 data, ... (slot_bytes apart)
//
// Every offset is page aligned, everything is plain fixed-layout data with
// offsets and never pointers, and the header carries a magic number, a
// version and its own sizes so a client built against another layout refuses
// to read instead of reading garbage.
//
// Slot data holds a batch's tensors at offsets given by SlotLayout: a
// classic job's images and labels (int64), or one tensor per field of a job
// with fields, then indices (int64, the dataset index of each row). The daemon
// bumps SlotHeader::generation to an odd value before it writes a slot and to
// the next even value once the batch is complete; a BatchHandle carries the
// even value. A client compares the two before and after reading: any
// difference means the slot was reclaimed under it.
#ifndef STOKER_COMMON_RING_LAYOUT_H_
#define STOKER_COMMON_RING_LAYOUT_H_

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"

namespace stoker {

inline constexpr uint64_t kRingMagic = 0x474e4952'4b4f5453ull;  // "STOKRING"
inline constexpr uint32_t kRingVersion = 1;
inline constexpr uint64_t kPageBytes = 4096;
inline constexpr uint64_t kTensorAlignment = 64;
inline constexpr uint32_t kImageChannels = 3;

struct RingHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint64_t header_bytes;       // sizeof(RingHeader) of the writer
  uint64_t slot_header_bytes;  // sizeof(SlotHeader) of the writer
  uint64_t slot_headers_offset;
  uint64_t slots_offset;
  uint64_t slot_bytes;  // stride between two slots' data
  uint64_t segment_bytes;
};

struct alignas(64) SlotHeader {
  // Odd while the daemon writes the slot; even and equal to the handle's
  // generation while the batch it holds is valid.
  std::atomic<uint64_t> generation;
  uint64_t epoch;
  uint64_t batch;
  uint32_t sample_count;
  uint32_t reserved;
};

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "slot generations must be lock-free to live in shared memory");
static_assert(std::is_standard_layout_v<RingHeader>);
static_assert(std::is_standard_layout_v<SlotHeader>);
static_assert(sizeof(SlotHeader) == 64);

// One tensor of a batch, described per sample: `row_bytes` each; a
// variable-bytes tensor (a BYTES field) also has an int64 length per sample.
struct SlotTensorSpec {
  uint64_t row_bytes = 0;
  bool variable = false;
};

// Where one tensor of a batch sits inside a slot (offsets from the slot's
// start), for a full batch.
struct SlotTensor {
  uint64_t offset = 0;
  uint64_t row_bytes = 0;
  uint64_t bytes = 0;  // batch_size * row_bytes
  bool variable = false;
  uint64_t lengths_offset = 0;  // variable: int64 [batch_size]
};

// Where each tensor of one batch sits inside a slot: the job's tensors in
// the order asked for, then the indices (int64, the dataset index of each
// row). A classic job's tensors are its images and int64 labels.
struct SlotLayout {
  std::vector<SlotTensor> tensors;
  uint64_t indices_offset = 0;
  uint64_t indices_bytes = 0;
  uint64_t slot_bytes = 0;  // page-rounded total
};

// The layout of a slot for batches of `batch_size` samples of `tensors`,
// each kTensorAlignment-aligned.
SlotLayout ComputeSlotLayout(uint32_t batch_size,
                             const std::vector<SlotTensorSpec>& tensors);

struct RingGeometry {
  uint32_t slot_count = 0;
  SlotLayout slot;
  uint64_t slot_headers_offset = 0;
  uint64_t slots_offset = 0;
  uint64_t segment_bytes = 0;

  uint64_t SlotOffset(uint32_t slot_index) const {
    return slots_offset + uint64_t{slot_index} * slot.slot_bytes;
  }
};

RingGeometry ComputeRingGeometry(uint32_t slot_count, const SlotLayout& slot);

// Fills `header` for `geometry`.
void InitRingHeader(const RingGeometry& geometry, RingHeader* header);

// Checks that `header`, found at the start of a mapping of `mapped_bytes`,
// was written by a compatible daemon and describes a ring inside the mapping.
absl::Status ValidateRingHeader(const RingHeader& header,
                                uint64_t mapped_bytes);

}  // namespace stoker

#endif  // STOKER_COMMON_RING_LAYOUT_H_
