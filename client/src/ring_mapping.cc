#include "client/src/ring_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fd_passing.h"
#include "common/status_macros.h"

namespace stoker::internal {
namespace {

// The ring's descriptor, and the lease table's after it with a token.
absl::StatusOr<std::vector<UniqueFd>> FetchRingFds(
    const std::string& ring_socket, const std::string& job_id,
    const std::string& lease_token) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (ring_socket.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ring socket path ", ring_socket, " is too long"));
  }
  std::memcpy(address.sun_path, ring_socket.c_str(), ring_socket.size() + 1);
  const UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) {
    return absl::UnavailableError(
        absl::StrCat("socket: ", std::strerror(errno)));
  }
  const timeval timeout{5, 0};
  ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&address),
                sizeof(address)) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach stokerd's ring socket ", ring_socket, ": ",
                     std::strerror(errno)));
  }
  const std::string request =
      lease_token.empty() ? job_id + "\n"
                          : absl::StrCat(job_id, " ", lease_token, "\n");
  std::string reply;
  std::vector<UniqueFd> fds;
  STOKER_RETURN_IF_ERROR(SendWithFd(sock.get(), request, -1));
  STOKER_RETURN_IF_ERROR(ReceiveWithFds(sock.get(), &reply, &fds));
  STOKER_RETURN_IF_ERROR(DecodeStatus(reply));
  if (fds.size() != (lease_token.empty() ? 1u : 2u)) {
    return absl::InternalError(
        absl::StrCat("the ring socket sent ", fds.size(), " descriptors"));
  }
  return fds;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RingMapping>> RingMapping::Open(
    const std::string& ring_socket, const std::string& job_id,
    bool private_view, const std::string& lease_token, UniqueFd* lease_table) {
  STOKER_ASSIGN_OR_RETURN(std::vector<UniqueFd> fds,
                          FetchRingFds(ring_socket, job_id, lease_token));
  if (fds.size() == 2 && lease_table != nullptr) {
    *lease_table = std::move(fds[1]);
  }
  return FromFd(std::move(fds[0]), private_view);
}

absl::StatusOr<std::unique_ptr<RingMapping>> RingMapping::FromFd(
    UniqueFd fd, bool private_view) {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) < sizeof(RingHeader)) {
    return absl::FailedPreconditionError("the job's ring is too small");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  int err = errno;
  if (data == MAP_FAILED) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot map the job's ring: ", std::strerror(err)));
  }
  std::unique_ptr<RingMapping> mapping(
      new RingMapping(static_cast<const uint8_t*>(data), size));
  absl::Status valid = ValidateRingHeader(mapping->header(), mapping->size());
  if (valid.ok() && private_view) {
    // Copy-on-write needs only read access to the descriptor. Slots are
    // page aligned (ring_layout), so discarding one slot's pages never
    // touches another's.
    const long page_bytes = ::sysconf(_SC_PAGESIZE);
    const RingHeader& h = mapping->header();
    if (page_bytes <= 0 || h.slot_bytes % page_bytes != 0 ||
        h.slots_offset % page_bytes != 0) {
      valid = absl::FailedPreconditionError(absl::StrCat(
          "the job's ring slots are not aligned to this machine's ", page_bytes,
          "-byte pages: no copy-on-write view"));
    } else {
      // The geometry as validated now (the header is the daemon's to write).
      mapping->page_bytes_ = static_cast<uint64_t>(page_bytes);
      mapping->slots_offset_ = h.slots_offset;
      mapping->slot_bytes_ = h.slot_bytes;
      mapping->slot_count_ = h.slot_count;
      void* view = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
                          fd.get(), 0);
      err = errno;
      if (view == MAP_FAILED) {
        valid = absl::ResourceExhaustedError(absl::StrCat(
            "cannot map the job's ring copy-on-write: ", std::strerror(err)));
      } else {
        mapping->view_ = static_cast<uint8_t*>(view);
        mapping->pagemap_.reset(
            ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
        mapping->pagemap_pid_ = ::getpid();
      }
    }
  }
  STOKER_RETURN_IF_ERROR(valid);
  return mapping;
}

RingMapping::~RingMapping() {
  if (view_ != nullptr) ::munmap(view_, size_);
  ::munmap(const_cast<uint8_t*>(data_), size_);
}

bool RingMapping::DiscardPrivateCopies(uint32_t slot) const {
  if (view_ == nullptr) return true;
  if (slot >= slot_count_) return false;
  uint8_t* const begin = view_ + slots_offset_ + uint64_t{slot} * slot_bytes_;
  // After a fork the descriptor would read the parent's page tables.
  if (!pagemap_ || pagemap_pid_ != ::getpid()) {
    return ::madvise(begin, slot_bytes_, MADV_DONTNEED) == 0;
  }
  // pagemap: one 64-bit entry per page. A page this process wrote is an
  // anonymous copy: present (bit 63) or swapped (bit 62), and not a file
  // page (bit 61). Untouched pages are the segment's own (file pages).
  constexpr uint64_t kPresent = uint64_t{1} << 63, kSwapped = uint64_t{1} << 62,
                     kFilePage = uint64_t{1} << 61;
  const uint64_t pages = slot_bytes_ / page_bytes_;
  const uint64_t first_entry = reinterpret_cast<uintptr_t>(begin) / page_bytes_;
  uint64_t entries[512];  // read in chunks: no allocation on release
  uint64_t run = 0;       // first page of the current run of copied pages
  bool ok = true;
  for (uint64_t chunk = 0; chunk < pages; chunk += std::size(entries)) {
    const uint64_t n = std::min<uint64_t>(std::size(entries), pages - chunk);
    const ssize_t want = static_cast<ssize_t>(n * sizeof(uint64_t));
    if (::pread(pagemap_.get(), entries, want,
                static_cast<off_t>((first_entry + chunk) * sizeof(uint64_t))) !=
        want) {
      return ::madvise(begin, slot_bytes_, MADV_DONTNEED) == 0;
    }
    for (uint64_t i = 0; i <= n; ++i) {
      const uint64_t page = chunk + i;
      const bool copied = i < n && (entries[i] & (kPresent | kSwapped)) != 0 &&
                          (entries[i] & kFilePage) == 0;
      if (copied) continue;
      if (page > run) {
        ok &= ::madvise(begin + run * page_bytes_, (page - run) * page_bytes_,
                        MADV_DONTNEED) == 0;
      }
      run = page + 1;
    }
    run = chunk + n;  // a run never crosses a chunk (it was just dropped)
  }
  // madvise fails on locked pages (mlock): then drop nothing, say so.
  return ok || ::madvise(begin, slot_bytes_, MADV_DONTNEED) == 0;
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
