#include "daemon/api/peer.h"

#include <sys/socket.h>
#include <sys/stat.h>
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

}  // namespace

absl::StatusOr<PeerCredentials> ReadPeerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return absl::InternalError(
        absl::StrCat("SO_PEERCRED: ", std::strerror(errno)));
  }
  PeerCredentials credentials{cred.pid, cred.uid, cred.gid, {}};
  std::vector<gid_t> groups(64);
  for (;;) {
    socklen_t bytes = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &bytes) ==
        0) {
      groups.resize(bytes / sizeof(gid_t));
      break;
    }
    if (errno != ERANGE || groups.size() >= 65536) {
      return absl::InternalError(
          absl::StrCat("SO_PEERGROUPS: ", std::strerror(errno)));
    }
    groups.resize(bytes / sizeof(gid_t) + 1);
  }
  credentials.groups = std::move(groups);
  return credentials;
}

PeerTable::PeerTable(uint32_t max_per_user, absl::Duration handshake_timeout,
                     uint32_t max_total)
    : max_per_user_(max_per_user),
      handshake_timeout_(handshake_timeout),
      max_total_(max_total) {}

void PeerTable::SetLimits(uint32_t max_per_user,
                          absl::Duration handshake_timeout) {
  absl::MutexLock lock(&mu_);
  max_per_user_ = max_per_user;
  handshake_timeout_ = handshake_timeout;
}

uint32_t PeerTable::max_per_user() const {
  absl::MutexLock lock(&mu_);
  return max_per_user_;
}

absl::Status PeerTable::Admit(int fd, const PeerCredentials& credentials,
                              uint32_t pending) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::InternalError(absl::StrCat("fstat: ", std::strerror(errno)));
  }
  absl::MutexLock lock(&mu_);
  by_fd_.erase(fd);  // a closed connection's number, reused
  auto held = held_.find(credentials.uid);
  const uint32_t mine = pending + (held == held_.end() ? 0 : held->second);
  if (mine >= max_per_user_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "uid ", credentials.uid, " already holds ", mine,
        " connections, the limit per user (--max_connections_per_user=",
        max_per_user_, ")"));
  }
  if (held_total_ >= max_total_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("stokerd already holds ", held_total_,
                     " connections, all its descriptors allow"));
  }
  by_fd_[fd] = {credentials, st.st_ino, absl::Now()};
  ++held_[credentials.uid];
  ++held_total_;
  return absl::OkStatus();
}

void PeerTable::Release(uid_t uid) {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(uid);
  if (it == held_.end() || it->second == 0) return;
  --held_total_;
  if (--it->second == 0) held_.erase(it);
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
  it->second.used = true;
  return it->second.credentials;
}

int PeerTable::Sweep(absl::Time now) {
  absl::MutexLock lock(&mu_);
  int shut = 0;
  for (auto it = by_fd_.begin(); it != by_fd_.end();) {
    struct stat st;
    if (::fstat(it->first, &st) != 0 || st.st_ino != it->second.inode) {
      it = by_fd_.erase(it);  // gRPC closed it
      continue;
    }
    Connection& c = it->second;
    if (!c.used && !c.shut && now - c.accepted > handshake_timeout_) {
      // gRPC owns the descriptor: end the connection, let gRPC close it.
      ::shutdown(it->first, SHUT_RDWR);
      c.shut = true;
      ++shut;
    }
    ++it;
  }
  return shut;
}

uint32_t PeerTable::CountFor(uid_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(uid);
  return it == held_.end() ? 0 : it->second;
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
  if (c.gid == *access.group) return true;
  for (gid_t g : c.groups) {
    if (g == *access.group) return true;
  }
  return false;
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

}  // namespace stoker
