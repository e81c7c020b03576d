// Ring: a job's shared-memory segment seen as N slots, plus each slot's state.
//
// The daemon is the only writer. Slot states live here, in daemon memory;
// what clients can see is the ring layout (common/ring_layout.h): the header,
// and per slot its generation and batch identity. A slot cycles
//
//   kFree --BeginFill--> kFilling --Publish--> kPublished --Free--> kFree
//
// Who holds a published slot (one consumer, or several in broadcast) is the
// Job's business.
//
// BeginFill makes the generation odd, Publish makes it even again: readers
// holding an older generation see that the slot was reused.
//
// Thread-safety: not thread-safe; the owning Job serializes every call. Only
// the bytes behind SlotData() are written concurrently, by workers, each to
// rows of a slot in kFilling.
#ifndef STOKER_DAEMON_SHM_RING_H_
#define STOKER_DAEMON_SHM_RING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ring_layout.h"
#include "daemon/shm/shm_segment.h"

namespace stoker {

enum class SlotState { kFree, kFilling, kPublished };

class Ring {
 public:
  // Creates the segment `name` for `geometry` with permission bits `mode`.
  static absl::StatusOr<std::unique_ptr<Ring>> Create(
      std::string name, const RingGeometry& geometry, mode_t mode);

  const RingGeometry& geometry() const { return geometry_; }
  const std::string& name() const { return segment_->name(); }
  uint32_t slot_count() const { return geometry_.slot_count; }

  SlotState state(uint32_t slot) const { return states_[slot]; }
  uint64_t generation(uint32_t slot) const;
  int CountInState(SlotState state) const;

  // Lowest-numbered free slot, if any.
  std::optional<uint32_t> FindFree() const;

  // kFree -> kFilling. Records the batch identity in the slot header.
  void BeginFill(uint32_t slot, uint64_t epoch, uint64_t batch,
                 uint32_t sample_count);
  // kFilling -> kPublished; returns the generation handles must carry.
  uint64_t Publish(uint32_t slot);
  // kPublished -> kFree.
  void Free(uint32_t slot);

  // Start of the slot's batch data (layout: geometry().slot).
  uint8_t* SlotData(uint32_t slot) const;

  // Removes the segment's name; the mapping stays valid.
  void Unlink() { segment_->Unlink(); }
  // See SharedSegment.
  int read_only_fd() const { return segment_->read_only_fd(); }
  bool DeletedElsewhere() const { return segment_->DeletedElsewhere(); }

 private:
  Ring(std::unique_ptr<SharedSegment> segment, const RingGeometry& geometry);
  SlotHeader* Header(uint32_t slot) const;

  const std::unique_ptr<SharedSegment> segment_;
  const RingGeometry geometry_;
  std::vector<SlotState> states_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_SHM_RING_H_
