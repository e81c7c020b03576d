#include "client/src/ring_mapping.h"

#include "absl/strings/str_cat.h"
#include "boost/interprocess/shared_memory_object.hpp"
#include "common/status_macros.h"

namespace stoker::internal {

namespace bip = boost::interprocess;

absl::StatusOr<std::unique_ptr<RingMapping>> RingMapping::Open(
    const std::string& name) {
  try {
    bip::shared_memory_object shm(bip::open_only, name.c_str(),
                                  bip::read_only);
    bip::offset_t size = 0;
    if (!shm.get_size(size) || size < static_cast<bip::offset_t>(
                                          sizeof(RingHeader))) {
      return absl::FailedPreconditionError(
          absl::StrCat("shared-memory segment '", name, "' is too small"));
    }
    bip::mapped_region region(shm, bip::read_only);
    std::unique_ptr<RingMapping> mapping(new RingMapping(std::move(region)));
    STOKER_RETURN_IF_ERROR(
        ValidateRingHeader(mapping->header(), mapping->size()));
    return mapping;
  } catch (const bip::interprocess_exception& e) {
    if (e.get_error_code() == bip::not_found_error) {
      return absl::NotFoundError(absl::StrCat(
          "shared-memory segment '", name, "' does not exist (job ended?)"));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot map shared-memory segment '", name, "': ", e.what()));
  }
}

uint64_t RingMapping::Generation(uint32_t slot) const {
  const auto* header = reinterpret_cast<const SlotHeader*>(
      data() + this->header().slot_headers_offset +
      uint64_t{slot} * sizeof(SlotHeader));
  return header->generation.load(std::memory_order_acquire);
}

bool RingMapping::InSlot(uint32_t slot, uint64_t offset, uint64_t bytes) const {
  const RingHeader& h = header();
  if (slot >= h.slot_count) return false;
  const uint64_t begin = h.slots_offset + uint64_t{slot} * h.slot_bytes;
  return offset >= begin && bytes <= h.slot_bytes &&
         offset - begin <= h.slot_bytes - bytes;
}

}  // namespace stoker::internal
