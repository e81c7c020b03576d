// RingMapping: a read-only mapping of a job's ring in a client.
//
// The mapping is PROT_READ: a client cannot write the daemon's memory. It is
// validated against the ring header (magic, version, sizes) before use.
#ifndef STOKER_CLIENT_SRC_RING_MAPPING_H_
#define STOKER_CLIENT_SRC_RING_MAPPING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "boost/interprocess/mapped_region.hpp"
#include "common/ring_layout.h"

namespace stoker::internal {

class RingMapping {
 public:
  // NOT_FOUND if the segment does not exist (the job has ended);
  // FAILED_PRECONDITION if it is not a ring this SDK understands.
  static absl::StatusOr<std::unique_ptr<RingMapping>> Open(
      const std::string& name);

  const uint8_t* data() const {
    return static_cast<const uint8_t*>(region_.get_address());
  }
  uint64_t size() const { return region_.get_size(); }
  const RingHeader& header() const {
    return *reinterpret_cast<const RingHeader*>(data());
  }
  // The slot's live generation (acquire: reads after it see what the daemon
  // wrote before publishing it).
  uint64_t Generation(uint32_t slot) const;
  // Whether [offset, offset + bytes) lies inside slot `slot`'s data.
  bool InSlot(uint32_t slot, uint64_t offset, uint64_t bytes) const;

 private:
  explicit RingMapping(boost::interprocess::mapped_region region)
      : region_(std::move(region)) {}
  boost::interprocess::mapped_region region_;
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_RING_MAPPING_H_
