#include "daemon/api/client_limits.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

constexpr size_t kMaxClientNameBytes = 64;

}  // namespace

std::string ClientOf(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kClientMetadataKey);
  if (it == metadata.end() || it->second.empty()) return "anonymous";
  std::string name(it->second.data(),
                   std::min(it->second.size(), kMaxClientNameBytes));
  // Only printable ASCII reaches logs and stats.
  for (char& ch : name) {
    if (ch < 0x21 || ch > 0x7e) ch = '?';
  }
  return name;
}

absl::Status ClientLimits::Reserve(const std::string& client, uint64_t n) {
  absl::MutexLock lock(&mu_);
  uint64_t& held = outstanding_[client];
  if (held + n > max_outstanding_) {
    const uint64_t before = held;
    if (held == 0) outstanding_.erase(client);
    return absl::ResourceExhaustedError(absl::StrCat(
        client, " would have ", before + n,
        " batches outstanding (credits plus unreleased leases, over all its "
        "streams); stokerd allows ",
        max_outstanding_,
        " per user (--max_leases_per_user): lower the prefetch or release "
        "batches sooner"));
  }
  held += n;
  return absl::OkStatus();
}

uint64_t ClientLimits::ReserveUpTo(const std::string& client, uint64_t n) {
  absl::MutexLock lock(&mu_);
  uint64_t& held = outstanding_[client];
  const uint64_t granted = std::min<uint64_t>(
      n, max_outstanding_ - std::min<uint64_t>(held, max_outstanding_));
  held += granted;
  if (held == 0) outstanding_.erase(client);
  return granted;
}

void ClientLimits::SetMax(uint32_t max_outstanding) {
  absl::MutexLock lock(&mu_);
  max_outstanding_ = max_outstanding;
}

void ClientLimits::Return(const std::string& client, uint64_t n) {
  absl::MutexLock lock(&mu_);
  auto it = outstanding_.find(client);
  if (it == outstanding_.end()) return;
  it->second -= std::min(it->second, n);
  if (it->second == 0) outstanding_.erase(it);
}

uint64_t ClientLimits::outstanding(const std::string& client) const {
  absl::MutexLock lock(&mu_);
  auto it = outstanding_.find(client);
  return it == outstanding_.end() ? 0 : it->second;
}

}  // namespace stoker
