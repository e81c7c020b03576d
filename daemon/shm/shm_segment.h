// SharedSegment: one POSIX shared-memory object, created by stokerd, mapped
// read-write by it, with every page reserved up front.
//
// Ownership: the segment owns the mapping and the name. Destroying it unmaps
// and unlinks; mappings held by clients stay valid until they unmap.
// Thread-safety: data() may be written from any thread; Unlink() and the
// destructor need external synchronization.
//
//   auto segment = SharedSegment::Create("stoker-0123-job", 1 << 20, 0600);
//   if (!segment.ok()) return segment.status();  // RESOURCE_EXHAUSTED if full
//   std::memset((*segment)->data(), 0, (*segment)->size());
#ifndef STOKER_DAEMON_SHM_SHM_SEGMENT_H_
#define STOKER_DAEMON_SHM_SHM_SEGMENT_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/interprocess/mapped_region.hpp"
#include "common/unique_fd.h"

namespace stoker {

class SharedSegment {
 public:
  // Creates `name` (no leading slash; must not exist yet) with `bytes` bytes
  // and permission bits `mode` (applied regardless of the umask), reserves
  // its pages with posix_fallocate and maps it. RESOURCE_EXHAUSTED when
  // /dev/shm cannot hold it, ALREADY_EXISTS when the name is taken.
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Create(std::string name,
                                                               uint64_t bytes,
                                                               mode_t mode);

  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  uint8_t* data() const { return static_cast<uint8_t*>(region_.get_address()); }
  uint64_t size() const { return region_.get_size(); }
  const std::string& name() const { return name_; }

  // Removes the name now; the memory lives on until every mapping is gone.
  void Unlink();

  // A read-only descriptor of the segment, opened at creation: what clients
  // are handed, so that nothing is ever looked up by name after creation (a
  // file put in its place by someone else is never served).
  int read_only_fd() const { return read_only_.get(); }
  // Whether another process removed the name (a cleanup script, systemd's
  // RemoveIPC=): the segment is no longer linked though this process did
  // not unlink it.
  bool DeletedElsewhere() const;

 private:
  SharedSegment(std::string name, boost::interprocess::mapped_region region,
                UniqueFd read_only)
      : name_(std::move(name)),
        region_(std::move(region)),
        read_only_(std::move(read_only)) {}

  const std::string name_;
  boost::interprocess::mapped_region region_;
  const UniqueFd read_only_;
  bool linked_ = true;
};

// Names of the shared-memory objects in /dev/shm that start with `prefix`.
std::vector<std::string> ListSegments(std::string_view prefix);

// Unlinks every shared-memory object whose name starts with `prefix`;
// returns how many it removed.
int RemoveSegments(std::string_view prefix);

}  // namespace stoker

#endif  // STOKER_DAEMON_SHM_SHM_SEGMENT_H_
