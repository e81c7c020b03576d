// The members of an uncompressed tar archive (a WebDataset shard), read
// from its headers alone: each regular file's name and where its bytes lie,
// so that a sample can later be read with one pread, at random.
//
// Hand-written rather than libarchive: libarchive does not tell where an
// entry's data starts (archive_read_header_position gives the header's
// offset, which pax and GNU long-name headers move away from the data;
// libarchive/libarchive#2295 asks for it), and finding it through its
// buffers would mean reading image bytes. The formats are small: ustar
// (with its name prefix), GNU long names ('L') and pax extended headers
// ('x': path and size); every header's checksum is verified and every size
// is checked against the file before it is trusted.
#ifndef STOKER_DAEMON_DATASETS_TAR_MEMBERS_H_
#define STOKER_DAEMON_DATASETS_TAR_MEMBERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/os/read_at.h"

namespace stoker {

// One regular file in the archive.
struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of its first byte, from the start of the archive
  uint64_t size = 0;
};

// The longest member name a shard may hold (PATH_MAX less its NUL): a
// longer one is refused naming the shard and the member's header.
inline constexpr size_t kMaxMemberNameBytes = 4095;

struct TarLimits {
  uint64_t max_member_bytes = uint64_t{256} << 20;  // as kMaxFileBytes
  uint64_t max_members = uint64_t{1} << 26;
  uint64_t max_header_bytes = uint64_t{1} << 20;  // a pax header or long name
  // All member names of one shard together (what a listing holds).
  uint64_t max_name_bytes = uint64_t{256} << 20;
};

// Lists the regular files of the tar archive open at `fd`, in archive
// order (directories, links and other entries are skipped). `shard` names
// the archive in errors, which are INVALID_ARGUMENT and give the byte
// offset of the header at fault: a compressed archive (gzip, bzip2, xz,
// zstd or lz4: its members cannot be read at random; decompress it), a
// header whose checksum does not match (corrupt, or not a tar file), a
// member that runs past the end of the file (truncated), a member larger
// than max_member_bytes, a pax record that does not parse, more than
// max_members members or max_name_bytes of names.
absl::StatusOr<std::vector<TarMember>> ReadTarMembers(
    int fd, const std::string& shard, const TarLimits& limits = {});

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_TAR_MEMBERS_H_
