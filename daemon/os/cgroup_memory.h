// The memory limit of the cgroup stokerd runs in: ring pages are charged
// to it, so a shared-memory budget above it gets the daemon OOM-killed
// instead of a job refused.
#ifndef STOKER_DAEMON_OS_CGROUP_MEMORY_H_
#define STOKER_DAEMON_OS_CGROUP_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

namespace stoker {

// The cgroup's memory limit in bytes (cgroup v2 memory.max, or v1
// memory.limit_in_bytes), read through `proc_cgroup` (/proc/self/cgroup)
// and under `cgroup_root` (/sys/fs/cgroup); nullopt when there is none
// ("max", v1's near-2^63 "unlimited") or it cannot be read.
std::optional<uint64_t> CgroupMemoryLimit(
    const std::string& proc_cgroup = "/proc/self/cgroup",
    const std::string& cgroup_root = "/sys/fs/cgroup");

// What the rings may take under a cgroup limit: the limit less a working
// reserve for the daemon itself (a quarter of it, at least 64 MiB).
uint64_t RingRoomUnder(uint64_t cgroup_limit);

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_CGROUP_MEMORY_H_
