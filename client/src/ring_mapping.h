// RingMapping: a read-only mapping of a job's ring in a client.
//
// The SDK asks the daemon's ring socket for the ring; the daemon checks who
// is asking (the connecting process's uid) and answers with a descriptor
// opened read-only, which the SDK maps PROT_READ and closes. The segment
// itself is mode 0600, so nobody else can open it by name. The mapping is
// validated against the ring header (magic, version, sizes) before use.
#ifndef STOKER_CLIENT_SRC_RING_MAPPING_H_
#define STOKER_CLIENT_SRC_RING_MAPPING_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/ring_layout.h"
#include "common/unique_fd.h"

namespace stoker::internal {

class RingMapping {
 public:
  // Asks the ring socket at `ring_socket` for job `job_id`'s ring and maps
  // it: PERMISSION_DENIED if this user may not read the job, the job's own
  // error if it failed (NOT_FOUND if it ended otherwise), FAILED_PRECONDITION
  // if it is not a ring this SDK understands, UNAVAILABLE if the daemon cannot
  // be reached. With `private_view`, slot data is also mapped copy-on-write
  // (see view()).
  // With a `lease_token` (a consumer's, from its Attached reply), the
  // consumer's lease table comes with the ring, in *lease_table.
  static absl::StatusOr<std::unique_ptr<RingMapping>> Open(
      const std::string& ring_socket, const std::string& job_id,
      bool private_view = false, const std::string& lease_token = "",
      UniqueFd* lease_table = nullptr);
  // Maps the ring open on `fd` (read-only).
  static absl::StatusOr<std::unique_ptr<RingMapping>> FromFd(
      UniqueFd fd, bool private_view = false);
  ~RingMapping();
  RingMapping(const RingMapping&) = delete;
  RingMapping& operator=(const RingMapping&) = delete;

  // The shared, read-only mapping: headers, generations, CUDA copies.
  const uint8_t* data() const { return data_; }
  // Where batches' tensors are read: data(), or with a private view a second
  // mapping of the same segment, MAP_PRIVATE and writable. A write to it
  // copies the page for this process only (the ring is untouched, nothing
  // crashes); DiscardPrivateCopies() drops such copies when the slot goes
  // back to the daemon, so the view shows the slot's next batch. It asks
  // /proc/self/pagemap which pages were copied and drops only those, so an
  // untouched slot keeps its page-table entries (no faults on its next
  // read); without pagemap it drops the whole slot.
  uint8_t* view() const {
    return view_ != nullptr ? view_ : const_cast<uint8_t*>(data_);
  }
  bool private_view() const { return view_ != nullptr; }
  // False if the copies could not be dropped (locked memory): the slot must
  // then not go back to the daemon.
  bool DiscardPrivateCopies(uint32_t slot) const;
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
  uint8_t* view_ = nullptr;  // MAP_PRIVATE, PROT_READ | PROT_WRITE
  UniqueFd pagemap_;         // /proc/self/pagemap, to find written pages
  pid_t pagemap_pid_ = 0;    // the process that opened it
  // With a private view: the slots' geometry as validated at open.
  uint64_t page_bytes_ = 0;
  uint64_t slots_offset_ = 0;
  uint64_t slot_bytes_ = 0;
  uint32_t slot_count_ = 0;
};

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_RING_MAPPING_H_
