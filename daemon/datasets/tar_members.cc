#include "daemon/datasets/tar_members.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/safe_text.h"
#include "common/status_macros.h"

namespace stoker {
namespace {

constexpr uint64_t kBlock = 512;
using Header = std::array<uint8_t, kBlock>;

uint64_t RoundUp(uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

absl::Status Bad(const std::string& shard, uint64_t at,
                 absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("shard '", shard, "': ", what,
                                                 " (header at byte ", at, ")"));
}

// A numeric field: octal digits (leading spaces, ended by NUL or space), or
// GNU's base-256 (high bit of the first byte set) for large values.
std::optional<uint64_t> Number(const uint8_t* field, size_t n) {
  if (field[0] & 0x80) {
    if (field[0] != 0x80) return std::nullopt;  // negative or too large
    uint64_t v = 0;
    for (size_t i = 1; i < n; ++i) {
      if (v >> 56) return std::nullopt;
      v = v << 8 | field[i];
    }
    return v;
  }
  size_t i = 0;
  while (i < n && field[i] == ' ') ++i;
  uint64_t v = 0;
  bool any = false;
  for (; i < n && field[i] >= '0' && field[i] <= '7'; ++i, any = true) {
    if (v >> 60) return std::nullopt;
    v = v * 8 + (field[i] - '0');
  }
  if (i < n && field[i] != 0 && field[i] != ' ') return std::nullopt;
  if (!any) return std::nullopt;
  return v;
}

// The checksum field holds the sum of the header's bytes with the field
// itself taken as spaces (unsigned; some old writers summed signed bytes).
bool ChecksumMatches(const Header& h) {
  const std::optional<uint64_t> stored = Number(&h[148], 8);
  if (!stored) return false;
  uint64_t sum = 0;
  int64_t signed_sum = 0;
  for (size_t i = 0; i < kBlock; ++i) {
    const uint8_t b = (i >= 148 && i < 156) ? ' ' : h[i];
    sum += b;
    signed_sum += static_cast<int8_t>(b);
  }
  return *stored == sum || int64_t(*stored) == signed_sum;
}

std::string Field(const uint8_t* p, size_t n) {
  const void* end = std::memchr(p, 0, n);
  return std::string(reinterpret_cast<const char*>(p),
                     end ? static_cast<const uint8_t*>(end) - p : n);
}

bool AllZero(const Header& h) {
  for (uint8_t b : h) {
    if (b != 0) return false;
  }
  return true;
}

const char* CompressionOf(const Header& h) {
  if (h[0] == 0x1f && h[1] == 0x8b) return "gzip";
  if (h[0] == 'B' && h[1] == 'Z' && h[2] == 'h') return "bzip2";
  if (std::memcmp(h.data(),
                  "\xfd"
                  "7zXZ",
                  5) == 0)
    return "xz";
  if (std::memcmp(h.data(), "\x28\xb5\x2f\xfd", 4) == 0) return "zstd";
  if (std::memcmp(h.data(), "\x04\x22\x4d\x18", 4) == 0) return "lz4";
  return nullptr;
}

// What a pax extended header ('x') says of the next member.
struct Overrides {
  std::optional<std::string> path;
  std::optional<uint64_t> size;
};

// Records "<length> <key>=<value>\n", the length counting the whole record.
bool ParsePax(absl::string_view data, Overrides* out) {
  while (!data.empty()) {
    const size_t space = data.find(' ');
    uint64_t length = 0;
    if (space == absl::string_view::npos ||
        !absl::SimpleAtoi(data.substr(0, space), &length) ||
        length <= space + 1 || length > data.size() ||
        data[length - 1] != '\n') {
      return false;
    }
    const absl::string_view record = data.substr(space + 1, length - space - 2);
    data.remove_prefix(length);
    const size_t equals = record.find('=');
    if (equals == absl::string_view::npos) return false;
    const absl::string_view key = record.substr(0, equals);
    const absl::string_view value = record.substr(equals + 1);
    if (key == "path") {
      out->path = std::string(value);
    } else if (key == "size") {
      uint64_t size = 0;
      if (!absl::SimpleAtoi(value, &size)) return false;
      out->size = size;
    }
  }
  return true;
}

// A pax header ('x') or GNU long name ('L') of `size` bytes at `at`: what
// it says of the next member goes to *next.
absl::Status ReadExtended(int fd, const std::string& shard,
                          const TarLimits& limits, uint64_t at, char type,
                          uint64_t size, Overrides* next) {
  if (size > limits.max_header_bytes) {
    return Bad(shard, at,
               absl::StrCat("an extended header of ", size, " bytes"));
  }
  std::string bytes(size, '\0');
  if (!ReadAt(fd, reinterpret_cast<uint8_t*>(bytes.data()), size,
              at + kBlock)) {
    return Bad(shard, at, "unreadable extended header");
  }
  if (type == 'L') {
    next->path = bytes.substr(0, bytes.find('\0'));
  } else if (!ParsePax(bytes, next)) {
    return Bad(shard, at, "a pax header that does not parse");
  }
  return absl::OkStatus();
}

// A regular file's header at `at`, its data `size` bytes right after it.
absl::Status AddMember(const std::string& shard, const TarLimits& limits,
                       const Header& h, uint64_t at, uint64_t size,
                       Overrides* next, std::vector<TarMember>* members,
                       uint64_t* name_bytes) {
  std::string name = Field(&h[0], 100);
  // POSIX ustar ("ustar\0") has a name prefix; old GNU ("ustar ") keeps
  // times there.
  if (std::memcmp(&h[257], "ustar\0", 6) == 0 && h[345] != 0) {
    name = absl::StrCat(Field(&h[345], 155), "/", name);
  }
  if (next->path) name = *next->path;
  *next = {};
  if (name.size() > kMaxMemberNameBytes) {
    return Bad(shard, at,
               absl::StrCat("a member name of ", name.size(),
                            " bytes, longer than ", kMaxMemberNameBytes, " ('",
                            SafeText(name.substr(0, 64)), "...')"));
  }
  if (size > limits.max_member_bytes) {
    return Bad(
        shard, at,
        absl::StrCat("member '", name, "' is ", size,
                     " bytes, above the limit of ", limits.max_member_bytes));
  }
  if (members->size() >= limits.max_members) {
    return Bad(shard, at,
               absl::StrCat("more than ", limits.max_members, " members"));
  }
  *name_bytes += name.size();
  if (*name_bytes > limits.max_name_bytes) {
    return Bad(shard, at,
               absl::StrCat("the member names pass ", limits.max_name_bytes,
                            " bytes, more than stokerd holds for one shard"));
  }
  members->push_back({std::move(name), at + kBlock, size});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<TarMember>> ReadTarMembers(int fd,
                                                      const std::string& shard,
                                                      const TarLimits& limits) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard '", shard, "' is not a regular file"));
  }
  const uint64_t file_size = uint64_t(st.st_size);
  std::vector<TarMember> members;
  uint64_t name_bytes = 0;
  Overrides next;  // from a pax or GNU long-name header, for the next member
  Header h;
  for (uint64_t at = 0; at < file_size;) {
    if (at + kBlock > file_size || !ReadAt(fd, h.data(), kBlock, at)) {
      return Bad(shard, at, "the archive ends inside a header (truncated?)");
    }
    if (at == 0) {
      if (const char* kind = CompressionOf(h)) {
        return Bad(shard, at,
                   absl::StrCat("a ", kind,
                                "-compressed tar, whose members "
                                "cannot be read at random; decompress it"));
      }
    }
    if (AllZero(h)) break;  // the end-of-archive blocks
    if (!ChecksumMatches(h)) {
      return Bad(shard, at, "bad header checksum (corrupt, or not a tar file)");
    }
    std::optional<uint64_t> size = Number(&h[124], 12);
    if (!size) return Bad(shard, at, "unreadable member size");
    const char type = char(h[156]);
    const bool regular = type == '0' || type == '\0' || type == '7';
    if (regular && next.size) size = next.size;
    const uint64_t data = at + kBlock;
    if (*size > file_size - data) {
      return Bad(shard, at,
                 absl::StrCat("a member of ", *size,
                              " bytes runs past the end of the "
                              "file (truncated?)"));
    }
    if (type == 'x' || type == 'L') {
      STOKER_RETURN_IF_ERROR(
          ReadExtended(fd, shard, limits, at, type, *size, &next));
    } else if (regular) {
      STOKER_RETURN_IF_ERROR(
          AddMember(shard, limits, h, at, *size, &next, &members, &name_bytes));
    } else if (type != 'g' && type != 'K') {
      next = {};  // a directory, link or device: not a sample's member
    }
    at = data + RoundUp(*size);
  }
  return members;
}

}  // namespace stoker
