// RingMapping: a read-only mapping of a job's ring in a client.
//
// The SDK asks the daemon's ring socket for the ring; the daemon checks who
// is asking (the connecting process's uid) and answers with a descriptor
// opened read-only, which the SDK maps PROT_READ and closes. The segment
// itself is mode 0600, so nobody else can open it by name. The mapping is
// validated against the ring header (magic, version, sizes) before use.
#ifndef STOKER_CLIENT_SRC_RING_MAPPING_H_
#define STOKER_CLIENT_SRC_RING_MAPPING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/ring_layout.h"

namespace stoker::internal {

class RingMapping {
 public:
  // Asks the ring socket at `ring_socket` for job `job_id`'s ring and maps
  // it: PERMISSION_DENIED if this user may not read the job, the job's own
  // error if it failed (NOT_FOUND if it ended otherwise), FAILED_PRECONDITION if it is not a ring this SDK
  // understands, UNAVAILABLE if the daemon cannot be reached.
  static absl::StatusOr<std::unique_ptr<RingMapping>> Open(
      const std::string& ring_socket, const std::string& job_id);
  // Maps the ring open on `fd` (read-only); takes ownership of `fd`.
  static absl::StatusOr<std::unique_ptr<RingMapping>> FromFd(int fd);
  ~RingMapping();
  RingMapping(const RingMapping&) = delete;
  RingMapping& operator=(const RingMapping&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const RingHeader& header() const {
    return *reinterpret_cast<const RingHeader*>(data());
  }
  // The slot's live generation (acquire: reads after it see what the daemon
  // wrote before publishing it).
  uint64_t Generation(uint32_t slot) const;
  // Whether [offset, offset + bytes) lies inside slot `slot`'s data.
  bool InSlot(uint32_t slot, uint64_t offset, uint64_t bytes) const;

 private:
  RingMapping(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  const uint8_t* const data_;
  const uint64_t size_;
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_RING_MAPPING_H_
