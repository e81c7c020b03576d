#include "daemon/api/listener.h"

#include <fcntl.h>
#include <grpcpp/server_posix.h>
#include <malloc.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "daemon/api/ring_requests.h"

namespace stoker {
namespace {

absl::Status Errno(const char* what, const std::string& path) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<UniqueFd> ListenUnix(const std::string& path, mode_t mode,
                                    std::optional<gid_t> group) {
  const std::string staging = path + ".new";
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (staging.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "socket path ", path, " is too long for a Unix socket (at most ",
        sizeof(address.sun_path) - 5, " bytes)"));
  }
  std::memcpy(address.sun_path, staging.c_str(), staging.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return Errno("socket for", path);
  ::unlink(staging.c_str());
  auto fail = [&](const char* what) {
    absl::Status status = Errno(what, staging);
    ::unlink(staging.c_str());
    return status;  // `fd` closes as it goes out of scope
  };
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address),
             sizeof(address)) != 0) {
    return fail("bind");
  }
  // The staged name is not the one clients use; fix its mode and group
  // before it takes the real name.
  if (::chmod(staging.c_str(), mode) != 0) return fail("chmod");
  if (group && ::chown(staging.c_str(), static_cast<uid_t>(-1), *group) != 0) {
    return fail("chown");
  }
  if (::listen(fd.get(), SOMAXCONN) != 0) return fail("listen");
  if (::rename(staging.c_str(), path.c_str()) != 0) return fail("rename");
  return fd;
}

absl::StatusOr<std::unique_ptr<Listener>> Listener::Open(
    const std::string& socket_path, const std::string& ring_path, mode_t mode,
    std::optional<gid_t> group, const std::map<std::string, int>& inherited) {
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  UniqueFd wake_read(wake[0]), wake_write(wake[1]);
  if (!inherited.empty()) {
    auto grpc_it = inherited.find(socket_path);
    auto ring_it = inherited.find(ring_path);
    if (grpc_it == inherited.end() || ring_it == inherited.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "socket activation passed ", inherited.size(),
          " sockets but not both ", socket_path, " and ", ring_path,
          ": the socket unit must listen on exactly those two (and --socket "
          "name the first)"));
    }
    std::unique_ptr<Listener> listener(new Listener(
        socket_path, ring_path, UniqueFd(grpc_it->second),
        UniqueFd(ring_it->second), std::move(wake_read), std::move(wake_write),
        /*owns_paths=*/false));
    STOKER_ASSIGN_OR_RETURN(listener->relay_, ConnectionRelay::Start());
    return listener;
  }
  auto grpc_fd = ListenUnix(socket_path, mode, group);
  if (!grpc_fd.ok()) return grpc_fd.status();
  auto ring_fd = ListenUnix(ring_path, mode, group);
  if (!ring_fd.ok()) {
    ::unlink(socket_path.c_str());  // *grpc_fd closes with it
    return ring_fd.status();
  }
  std::unique_ptr<Listener> listener(new Listener(
      socket_path, ring_path, *std::move(grpc_fd), *std::move(ring_fd),
      std::move(wake_read), std::move(wake_write), /*owns_paths=*/true));
  STOKER_ASSIGN_OR_RETURN(listener->relay_, ConnectionRelay::Start());
  return listener;
}

Listener::Listener(std::string socket_path, std::string ring_path,
                   UniqueFd grpc_fd, UniqueFd ring_fd, UniqueFd wake_read,
                   UniqueFd wake_write, bool owns_paths)
    : socket_path_(std::move(socket_path)),
      ring_path_(std::move(ring_path)),
      grpc_fd_(std::move(grpc_fd)),
      ring_fd_(std::move(ring_fd)),
      wake_read_(std::move(wake_read)),
      wake_write_(std::move(wake_write)),
      owns_paths_(owns_paths) {}

Listener::~Listener() { Stop(); }

void Listener::Start(grpc::Server* server, PeerTable* peers,
                     RingHandler on_ring) {
  thread_ = std::thread([this, server, peers, on_ring = std::move(on_ring)] {
    Run(server, peers, on_ring);
  });
}

void Listener::Run(grpc::Server* server, PeerTable* peers,
                   RingHandler on_ring) {
  absl::Time next_sweep = absl::Now();
  for (;;) {
    std::vector<pollfd> fds = {{wake_read_.get(), POLLIN, 0},
                               {grpc_fd_.get(), POLLIN, 0},
                               {ring_fd_.get(), POLLIN, 0}};
    absl::Time wake = next_sweep;
    for (const RingRequest& r : ring_requests_) {
      fds.push_back({r.fd.get(), POLLIN, 0});
      wake = std::min(wake, r.deadline);
    }
    const int timeout_ms = static_cast<int>(std::clamp<int64_t>(
        absl::ToInt64Milliseconds(wake - absl::Now()) + 1, 0, 1000));
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll on the listening sockets: {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;
    // Requests first: their descriptors are fds[3...] in this order.
    size_t kept = 0;
    const absl::Time now = absl::Now();
    for (size_t i = 0; i < ring_requests_.size(); ++i) {
      RingRequest& r = ring_requests_[i];
      bool done = false;
      if (fds[3 + i].revents != 0) {
        done = ReadRing(r, on_ring);
      } else if (now >= r.deadline) {
        on_ring(r.fd.get(), r.credentials,
                absl::InvalidArgumentError(
                    "the ring request did not arrive within a second"));
        done = true;
      }
      if (!done) ring_requests_[kept++] = std::move(r);
    }
    ring_requests_.resize(kept);
    if (fds[1].revents & POLLIN) AcceptGrpc(server, peers);
    if (fds[2].revents & POLLIN) AcceptRing(*peers);
    if (now >= next_sweep) {
      if (const int shut = peers->Sweep(now); shut > 0) {
        spdlog::info("closed {} connections that made no call in time", shut);
      }
      // What closed connections' calls held goes back to the system, not
      // only to malloc's free lists (a flood of unread answers left
      // hundreds of MiB resident after its connection closed); at most
      // every kTrimEvery, as clients come and go all the time.
      const uint64_t closed = relay_->closed();
      if (closed != trimmed_at_ && now >= next_trim_) {
        ::malloc_trim(0);
        trimmed_at_ = closed;
        next_trim_ = now + kTrimEvery;
      }
      next_sweep = now + absl::Seconds(1);
    }
  }
}

void Listener::AcceptGrpc(grpc::Server* server, PeerTable* peers) {
  UniqueFd fd(::accept4(grpc_fd_.get(), nullptr, nullptr,
                        SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!fd) {
    if (errno != EAGAIN && errno != EINTR) {
      spdlog::warn("accept on {}: {}", socket_path_, std::strerror(errno));
      if (errno == EMFILE || errno == ENFILE) ::usleep(100 * 1000);
    }
    return;
  }
  auto credentials = ReadPeerCredentials(fd.get());
  if (!credentials.ok()) {
    spdlog::warn("dropping a connection: {}", credentials.status().message());
    return;
  }
  // gRPC gets one end of a socket pair; the relay copies between the other
  // and the client (see relay.h). The table knows the connection by gRPC's
  // end.
  auto pair = ConnectionRelay::Pair();
  if (!pair.ok()) {
    spdlog::warn("dropping a connection: {}", pair.status().message());
    return;
  }
  auto& [relay_end, grpc_end] = *pair;
  absl::Status admitted = peers->Admit(grpc_end.get(), *credentials,
                                       RingRequestsOf(credentials->uid));
  if (!admitted.ok()) {
    // Closed unanswered: the client's channel sees the connection drop.
    // Said once a minute per user (a flood would fill the log).
    absl::Time& logged = limit_logged_[credentials->uid];
    if (absl::Now() - logged >= absl::Minutes(1)) {
      spdlog::warn("refusing connections of uid {} (pid {}): {}",
                   credentials->uid, credentials->pid, admitted.message());
      logged = absl::Now();
    }
    return;
  }
  // It counts against its user until the relay has closed both ends.
  relay_->Add(std::move(fd), std::move(relay_end), credentials->pid,
              [peers, uid = credentials->uid] { peers->Release(uid); });
  // gRPC owns its end from here on.
  grpc::AddInsecureChannelFromFd(server, grpc_end.release());
}

uint32_t Listener::RingRequestsOf(uid_t uid) const {
  uint32_t n = 0;
  for (const RingRequest& r : ring_requests_) n += r.credentials.uid == uid;
  return n;
}

void Listener::AcceptRing(const PeerTable& peers) {
  UniqueFd fd(::accept4(ring_fd_.get(), nullptr, nullptr,
                        SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!fd) {
    if (errno == EMFILE || errno == ENFILE) ::usleep(100 * 1000);
    return;
  }
  auto credentials = ReadPeerCredentials(fd.get());
  if (!credentials.ok()) return;
  const uint32_t mine = RingRequestsOf(credentials->uid);
  if (mine >= kMaxRingRequestsPerUser ||
      mine + peers.CountFor(credentials->uid) >= peers.max_per_user() ||
      ring_requests_.size() >= kMaxRingRequests) {
    return;  // closed unanswered: too many of this user's are waiting
  }
  ring_requests_.push_back({std::move(fd),
                            *std::move(credentials),
                            absl::Now() + absl::Seconds(1),
                            {}});
}

bool Listener::ReadRing(RingRequest& r, const RingHandler& on_ring) {
  char buffer[256];
  const ssize_t n = ::recv(r.fd.get(), buffer, sizeof(buffer), 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0) return true;  // the client went away
  r.received.append(buffer, static_cast<size_t>(n));
  auto query = ParseRingRequest(r.received);
  if (query.ok() && !query->has_value()) return false;
  on_ring(r.fd.get(), r.credentials,
          query.ok() ? absl::StatusOr<RingQuery>(**query)
                     : absl::StatusOr<RingQuery>(query.status()));
  return true;
}

void Listener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    const char byte = 0;
    (void)!::write(wake_write_.get(), &byte, 1);
    thread_.join();
  }
  ring_requests_.clear();
  // The relay goes on (it ends with the listener): the connections gRPC
  // still serves say goodbye through it.
  grpc_fd_.reset();
  ring_fd_.reset();
  wake_read_.reset();
  wake_write_.reset();
  if (owns_paths_) {
    ::unlink(socket_path_.c_str());
    ::unlink(ring_path_.c_str());
  }
}

}  // namespace stoker
