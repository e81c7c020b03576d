#include "daemon/api/peer.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/api/client_limits.h"

namespace stoker {
namespace {

constexpr std::string_view kFdPeerPrefix = "fd:";

bool InGroupDatabase(uid_t uid, gid_t primary, gid_t group) {
  std::vector<char> buffer(16384);
  passwd entry;
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return false;
  }
  int count = 64;
  std::vector<gid_t> groups(count);
  if (::getgrouplist(found->pw_name, primary, groups.data(), &count) < 0) {
    groups.resize(count);
    if (::getgrouplist(found->pw_name, primary, groups.data(), &count) < 0) {
      return false;
    }
  }
  groups.resize(count);
  for (gid_t g : groups) {
    if (g == group) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<PeerCredentials> ReadPeerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return absl::InternalError(
        absl::StrCat("SO_PEERCRED: ", std::strerror(errno)));
  }
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

void PeerTable::Set(int fd, const PeerCredentials& credentials) {
  absl::MutexLock lock(&mu_);
  by_fd_[fd] = credentials;
}

std::optional<PeerCredentials> PeerTable::Find(std::string_view peer) const {
  if (!peer.starts_with(kFdPeerPrefix)) return std::nullopt;
  peer.remove_prefix(kFdPeerPrefix.size());
  int fd = -1;
  const auto [end, error] =
      std::from_chars(peer.data(), peer.data() + peer.size(), fd);
  if (error != std::errc() || end != peer.data() + peer.size()) {
    return std::nullopt;
  }
  absl::MutexLock lock(&mu_);
  auto it = by_fd_.find(fd);
  if (it == by_fd_.end()) return std::nullopt;
  return it->second;
}

Peer PeerOf(const grpc::CallbackServerContext& context,
            const PeerTable* peers) {
  Peer peer{.client = ClientOf(context)};
  if (peers != nullptr) peer.credentials = peers->Find(context.peer());
  return peer;
}

bool MayAccess(const JobAccess& access, const Peer& peer) {
  if (!peer.credentials) return false;
  const PeerCredentials& c = *peer.credentials;
  if (c.uid == access.owner_uid || c.uid == 0 || c.uid == ::geteuid()) {
    return true;
  }
  if (!access.group) return false;
  return c.gid == *access.group || InGroupDatabase(c.uid, c.gid, *access.group);
}

absl::Status CheckAccess(const JobAccess& access, const Peer& peer,
                         std::string_view job_id) {
  if (MayAccess(access, peer)) return absl::OkStatus();
  if (!peer.credentials) {
    return absl::PermissionDeniedError(
        "stokerd cannot tell who is calling (no peer credentials)");
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "job ", std::string(job_id), " belongs to uid ", access.owner_uid,
      "; uid ", peer.credentials->uid,
      " may use it only if its owner shares it with a group this user is in "
      "(JobSpec.access_group)"));
}

absl::StatusOr<gid_t> ResolveGroup(std::string_view name) {
  gid_t number = 0;
  const auto [end, error] =
      std::from_chars(name.data(), name.data() + name.size(), number);
  if (error == std::errc() && end == name.data() + name.size()) return number;
  std::vector<char> buffer(16384);
  group entry;
  group* found = nullptr;
  const std::string key(name);
  if (::getgrnam_r(key.c_str(), &entry, buffer.data(), buffer.size(), &found) !=
          0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("group '", key, "' does not exist on this node"));
  }
  return found->gr_gid;
}

}  // namespace stoker
