#include "daemon/shm/ring.h"

#include <algorithm>
#include <new>

#include "common/check.h"
#include "common/status_macros.h"

namespace stoker {

absl::StatusOr<std::unique_ptr<Ring>> Ring::Create(std::string name,
                                                   const RingGeometry& geometry,
                                                   mode_t mode) {
  STOKER_ASSIGN_OR_RETURN(
      auto segment,
      SharedSegment::Create(std::move(name), geometry.segment_bytes, mode));
  return std::unique_ptr<Ring>(new Ring(std::move(segment), geometry));
}

Ring::Ring(std::unique_ptr<SharedSegment> segment, const RingGeometry& geometry)
    : segment_(std::move(segment)),
      geometry_(geometry),
      states_(geometry.slot_count, SlotState::kFree) {
  // posix_fallocate handed us zeroed pages; construct the headers in place.
  auto* header = new (segment_->data()) RingHeader{};
  InitRingHeader(geometry_, header);
  for (uint32_t slot = 0; slot < geometry_.slot_count; ++slot) {
    new (segment_->data() + geometry_.slot_headers_offset +
         uint64_t{slot} * sizeof(SlotHeader)) SlotHeader{};
  }
}

SlotHeader* Ring::Header(uint32_t slot) const {
  return reinterpret_cast<SlotHeader*>(segment_->data() +
                                       geometry_.slot_headers_offset +
                                       uint64_t{slot} * sizeof(SlotHeader));
}

uint8_t* Ring::SlotData(uint32_t slot) const {
  return segment_->data() + geometry_.SlotOffset(slot);
}

uint64_t Ring::generation(uint32_t slot) const {
  return Header(slot)->generation.load(std::memory_order_relaxed);
}

int Ring::CountInState(SlotState state) const {
  return static_cast<int>(std::count(states_.begin(), states_.end(), state));
}

std::optional<uint32_t> Ring::FindFree() const {
  for (uint32_t slot = 0; slot < states_.size(); ++slot) {
    if (states_[slot] == SlotState::kFree) return slot;
  }
  return std::nullopt;
}

void Ring::BeginFill(uint32_t slot, uint64_t epoch, uint64_t batch,
                     uint32_t sample_count) {
  STOKER_CHECK(states_[slot] == SlotState::kFree);
  SlotHeader* header = Header(slot);
  // Odd: a reader that compares generations sees the slot is being rewritten.
  header->generation.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  header->epoch = epoch;
  header->batch = batch;
  header->sample_count = sample_count;
  states_[slot] = SlotState::kFilling;
}

uint64_t Ring::Publish(uint32_t slot) {
  STOKER_CHECK(states_[slot] == SlotState::kFilling);
  states_[slot] = SlotState::kPublished;
  // Release: the pixels written by workers become visible before the even
  // generation does.
  return Header(slot)->generation.fetch_add(1, std::memory_order_release) + 1;
}

void Ring::Free(uint32_t slot) {
  STOKER_CHECK(states_[slot] == SlotState::kPublished);
  states_[slot] = SlotState::kFree;
}

}  // namespace stoker
