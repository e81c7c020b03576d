#include "common/lease_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

constexpr uint64_t kLeaseMagic = 0x4553'4145'4c4b'4f54ull;  // "TOKLEASE"
constexpr uint32_t kLeaseVersion = 1;
constexpr uint64_t kLeased = 1, kClaimed = 2, kRevoked = 3;
constexpr uint32_t kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

constexpr uint64_t WordOf(uint64_t generation, uint64_t state) {
  return generation << 2 | state;
}

absl::Status Errno(absl::string_view what) {
  const int err = errno;
  return absl::Status(err == EMFILE || err == ENFILE || err == ENOMEM
                          ? absl::StatusCode::kResourceExhausted
                          : absl::StatusCode::kInternal,
                      absl::StrCat(what, ": ", std::strerror(err)));
}

}  // namespace

struct LeaseTable::Layout {
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  std::atomic<uint32_t> ended;  // set (release) after code and message
  int32_t code;
  uint32_t message_bytes;
  uint32_t reserved;
  char message[1024 - 32];
  std::atomic<uint64_t> words[kMaxLeaseSlots];
};
static_assert(sizeof(LeaseTable::Layout) <= kLeaseTableBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<uint32_t>::is_always_lock_free);

absl::StatusOr<std::unique_ptr<LeaseTable>> LeaseTable::Create(uint32_t slots,
                                                               uid_t uid) {
  if (slots == 0 || slots > kMaxLeaseSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("a lease table holds 1 to ", kMaxLeaseSlots, " slots"));
  }
  UniqueFd fd(::memfd_create("stoker-leases", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return Errno("memfd_create");
  if (::ftruncate(fd.get(), kLeaseTableBytes) != 0) return Errno("ftruncate");
  if (::fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) return Errno("F_ADD_SEALS");
  void* page = ::mmap(nullptr, kLeaseTableBytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED, fd.get(), 0);
  if (page == MAP_FAILED) return Errno("mmap of a lease table");
  std::unique_ptr<LeaseTable> table(
      new LeaseTable(static_cast<Layout*>(page), std::move(fd)));
  table->page_->magic = kLeaseMagic;
  table->page_->version = kLeaseVersion;
  table->page_->slot_count = slots;
  unsigned char secret[16];
  if (::getrandom(secret, sizeof(secret), 0) != sizeof(secret)) {
    return Errno("getrandom");
  }
  table->token_ = absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(secret), sizeof(secret)));
  table->uid_ = uid;
  return table;
}

absl::StatusOr<std::unique_ptr<LeaseTable>> LeaseTable::Map(UniqueFd fd) {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) != kLeaseTableBytes ||
      (::fcntl(fd.get(), F_GET_SEALS) & kSeals) != kSeals) {
    return absl::FailedPreconditionError(
        "the daemon sent a lease table that is not one");
  }
  void* page = ::mmap(nullptr, kLeaseTableBytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED, fd.get(), 0);
  if (page == MAP_FAILED) return Errno("mmap of the lease table");
  std::unique_ptr<LeaseTable> table(
      new LeaseTable(static_cast<Layout*>(page), UniqueFd()));
  if (table->page_->magic != kLeaseMagic ||
      table->page_->version != kLeaseVersion || table->page_->slot_count == 0 ||
      table->page_->slot_count > kMaxLeaseSlots) {
    return absl::FailedPreconditionError(
        "the daemon's lease table has another layout: update the SDK or the "
        "daemon so that both are of one release");
  }
  return table;
}

LeaseTable::~LeaseTable() { ::munmap(page_, kLeaseTableBytes); }

std::atomic<uint64_t>& LeaseTable::Word(uint32_t slot) const {
  return page_->words[std::min(slot, kMaxLeaseSlots - 1)];
}

void LeaseTable::Lease(uint32_t slot, uint64_t generation) {
  if (slot >= kMaxLeaseSlots) return;
  leased_[slot] = WordOf(generation, kLeased);
  Word(slot).store(leased_[slot], std::memory_order_release);
}

bool LeaseTable::Revoke(uint32_t slot) {
  if (slot >= kMaxLeaseSlots || leased_[slot] == 0) return false;
  uint64_t expected = leased_[slot];
  const uint64_t generation = expected >> 2;
  leased_[slot] = 0;
  if (Word(slot).compare_exchange_strong(expected,
                                         WordOf(generation, kRevoked))) {
    return false;
  }
  if (expected == WordOf(generation, kClaimed)) return true;
  // Anything else was written by the client: the lease is not claimed.
  Word(slot).store(WordOf(generation, kRevoked));
  return false;
}

void LeaseTable::Finish(const absl::Status& why) {
  if (finished_ || why.ok()) return;
  finished_ = true;
  const size_t n = std::min(why.message().size(), sizeof(page_->message));
  std::memcpy(page_->message, why.message().data(), n);
  page_->message_bytes = static_cast<uint32_t>(n);
  page_->code = static_cast<int32_t>(why.code());
  page_->ended.store(1, std::memory_order_release);
}

bool LeaseTable::Claim(uint32_t slot, uint64_t generation) {
  if (slot >= page_->slot_count) return false;
  uint64_t expected = WordOf(generation, kLeased);
  return Word(slot).compare_exchange_strong(expected,
                                            WordOf(generation, kClaimed)) ||
         expected == WordOf(generation, kClaimed);
}

bool LeaseTable::Live(uint32_t slot, uint64_t generation) const {
  if (slot >= page_->slot_count) return false;
  const uint64_t word = Word(slot).load();
  return word == WordOf(generation, kLeased) ||
         word == WordOf(generation, kClaimed);
}

void LeaseTable::RevokeUnclaimed() {
  for (uint32_t slot = 0; slot < page_->slot_count; ++slot) {
    uint64_t word = Word(slot).load();
    while ((word & 3) == kLeased && !Word(slot).compare_exchange_weak(
                                        word, WordOf(word >> 2, kRevoked))) {
    }
  }
}

absl::Status LeaseTable::Ended() const {
  if (page_->ended.load(std::memory_order_acquire) == 0) {
    return absl::OkStatus();
  }
  const int32_t code = page_->code;
  const size_t n =
      std::min<size_t>(page_->message_bytes, sizeof(page_->message));
  return absl::Status(code > 0 && code <= 16
                          ? static_cast<absl::StatusCode>(code)
                          : absl::StatusCode::kUnknown,
                      std::string(page_->message, n));
}

}  // namespace stoker
