#include "daemon/api/relay.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace stoker {
namespace {

constexpr uint8_t kSettings = 0x4;  // the HTTP/2 frame type

absl::Status Errno(const char* what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

struct ConnectionRelay::Connection {
  // One side of the connection: the client's, or the relay's end of the
  // pair gRPC holds the other end of.
  struct Side {
    UniqueFd fd;
    bool eof = false;   // it sends no more
    bool gone = false;  // it takes no more (hung up, or a write failed)
    bool shut = false;  // told that the other side sends no more
  };
  Side client, inner;
  pid_t pid = 0;
  std::function<void()> on_closed;
  std::string up, down;  // bytes on their way to gRPC, to the client
  Http2HeaderScanner scanner;
  // The server's first frame (its SETTINGS): the header as read, where the
  // frame ends in the bytes sent down (0: not known yet), and how many of
  // those bytes the client was sent.
  std::string server_head;
  uint64_t server_settings_end = 0;
  uint64_t down_delivered = 0;

  // Notes the first bytes gRPC sends (its connection preface).
  void SawDown(const uint8_t* data, size_t size) {
    const size_t n = std::min(size, size_t{9} - server_head.size());
    server_head.append(reinterpret_cast<const char*>(data), n);
    if (n > 0 && server_head.size() == 9 && server_head[3] == char{kSettings}) {
      server_settings_end = 9 + (uint64_t{uint8_t(server_head[0])} << 16 |
                                 uint64_t{uint8_t(server_head[1])} << 8 |
                                 uint8_t(server_head[2]));
    }
  }

  // Once gRPC closed its end (not just its writing half), the client gets
  // what gRPC sent before, if it takes it within kRelayLinger.
  absl::Time linger_until = absl::InfiniteFuture();

  bool done(absl::Time now) const {
    if (inner.gone) return down.empty() || client.gone || now >= linger_until;
    return (client.eof || client.gone) && inner.eof && up.empty() &&
           (down.empty() || client.gone);
  }
};

absl::StatusOr<std::unique_ptr<ConnectionRelay>> ConnectionRelay::Start() {
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll) return Errno("epoll_create1");
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return Errno("eventfd");
  epoll_event event{.events = EPOLLIN, .data = {.fd = wake.get()}};
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, wake.get(), &event) != 0) {
    return Errno("epoll_ctl");
  }
  std::unique_ptr<ConnectionRelay> relay(
      new ConnectionRelay(std::move(epoll), std::move(wake)));
  relay->thread_ = std::thread([r = relay.get()] { r->Run(); });
  return relay;
}

ConnectionRelay::ConnectionRelay(UniqueFd epoll, UniqueFd wake)
    : epoll_(std::move(epoll)), wake_(std::move(wake)) {}

ConnectionRelay::~ConnectionRelay() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

uint64_t ConnectionRelay::cut_off() const {
  absl::MutexLock lock(&mu_);
  return cut_off_;
}

size_t ConnectionRelay::open() const {
  absl::MutexLock lock(&mu_);
  return open_;
}

uint64_t ConnectionRelay::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

absl::StatusOr<std::pair<UniqueFd, UniqueFd>> ConnectionRelay::Pair() {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
                   pair) != 0) {
    return Errno("socketpair");
  }
  return std::make_pair(UniqueFd(pair[0]), UniqueFd(pair[1]));
}

void ConnectionRelay::Add(UniqueFd client, UniqueFd inner, pid_t pid,
                          std::function<void()> on_closed) {
  auto c = std::make_unique<Connection>();
  c->client.fd = std::move(client);
  c->inner.fd = std::move(inner);
  c->pid = pid;
  c->on_closed = std::move(on_closed);
  {
    absl::MutexLock lock(&mu_);
    incoming_.push_back(std::move(c));
    ++open_;
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
}

void ConnectionRelay::Run() {
  epoll_event events[64];
  for (;;) {
    // Lingering connections are looked at again at least every 100 ms.
    const int n =
        ::epoll_wait(epoll_.get(), events, 64, lingering_.empty() ? -1 : 100);
    if (n < 0 && errno != EINTR) {
      spdlog::error("the connection relay stops: epoll_wait: {}",
                    std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_.get()) {
        uint64_t count;
        (void)!::read(wake_.get(), &count, sizeof(count));
        absl::MutexLock lock(&mu_);
        if (stop_) return;  // connections close with the map
        continue;
      }
      int client_fd = fd;
      const bool client_side = connections_.count(fd) > 0;
      if (!client_side) {
        auto it = client_of_inner_.find(fd);
        if (it == client_of_inner_.end()) continue;  // closed this round
        client_fd = it->second;
      }
      Connection& c = *connections_.at(client_fd);
      if (Serve(c, client_side, events[i].events)) {
        Watch(c);
      } else {
        Close(client_fd);
      }
    }
    EndLingering();
    TakeNew();
  }
}

void ConnectionRelay::TakeNew() {
  std::deque<std::unique_ptr<Connection>> fresh;
  {
    absl::MutexLock lock(&mu_);
    fresh.swap(incoming_);
  }
  for (auto& c : fresh) {
    const int client_fd = c->client.fd.get();
    const int inner_fd = c->inner.fd.get();
    epoll_event a{.events = 0, .data = {.fd = client_fd}};
    epoll_event b{.events = 0, .data = {.fd = inner_fd}};
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, client_fd, &a) != 0 ||
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, inner_fd, &b) != 0) {
      spdlog::warn("dropping a connection of pid {}: epoll_ctl: {}", c->pid,
                   std::strerror(errno));
      Closed(std::move(c));  // gRPC sees the connection end
      continue;
    }
    client_of_inner_[inner_fd] = client_fd;
    Connection& added = *(connections_[client_fd] = std::move(c));
    Watch(added);
  }
}

bool ConnectionRelay::Serve(Connection& c, bool client_side, uint32_t events) {
  if (events & EPOLLERR) return false;
  Connection::Side& side = client_side ? c.client : c.inner;
  // A side that hung up is read to its end at once (what is left is in its
  // socket's buffer), then leaves the set: a hang-up cannot be unwatched.
  const bool hung_up = events & EPOLLHUP;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) {
    if (!ReadFrom(c, client_side, /*drain=*/hung_up)) return false;
  }
  if (hung_up) {
    side.eof = side.gone = true;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, side.fd.get(), nullptr);
    if (!client_side) {
      c.linger_until = absl::Now() + kRelayLinger;
      lingering_.insert(c.client.fd.get());
    }
  }
  Flush(c, /*to_client=*/false);
  Flush(c, /*to_client=*/true);
  // An end of input travels once what came before it has.
  if (c.client.eof && c.up.empty() && !c.inner.shut && !c.inner.gone) {
    ::shutdown(c.inner.fd.get(), SHUT_WR);
    c.inner.shut = true;
  }
  if (c.inner.eof && c.down.empty() && !c.client.shut && !c.client.gone) {
    ::shutdown(c.client.fd.get(), SHUT_WR);
    c.client.shut = true;
  }
  return !c.done(absl::Now());
}

void ConnectionRelay::EndLingering() {
  const absl::Time now = absl::Now();
  for (auto it = lingering_.begin(); it != lingering_.end();) {
    const int client_fd = *it++;
    auto found = connections_.find(client_fd);
    if (found == connections_.end()) continue;
    Connection& c = *found->second;
    Flush(c, /*to_client=*/true);
    if (c.done(now)) Close(client_fd);
  }
}

bool ConnectionRelay::ReadFrom(Connection& c, bool client_side, bool drain) {
  std::string& into = client_side ? c.up : c.down;
  Connection::Side& side = client_side ? c.client : c.inner;
  uint8_t buffer[64 << 10];
  while (!side.eof && (drain || into.size() < kRelayBufferBytes)) {
    const ssize_t n = ::recv(side.fd.get(), buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) {  // the end, or a reset: it sends no more
      side.eof = true;
      return true;
    }
    if (!client_side) c.SawDown(buffer, static_cast<size_t>(n));
    c.scanner.set_settings_delivered(c.server_settings_end > 0 &&
                                     c.down_delivered >= c.server_settings_end);
    if (client_side && !c.scanner.Feed(buffer, static_cast<size_t>(n))) {
      spdlog::warn("closed a connection of pid {}: {}", c.pid, c.scanner.why());
      absl::MutexLock lock(&mu_);
      ++cut_off_;
      return false;
    }
    into.append(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
  }
  return true;
}

void ConnectionRelay::Flush(Connection& c, bool to_client) {
  std::string& from = to_client ? c.down : c.up;
  Connection::Side& to = to_client ? c.client : c.inner;
  if (to.gone) {
    from.clear();  // nobody to take it
    return;
  }
  size_t sent = 0;
  while (sent < from.size()) {
    const ssize_t n = ::send(to.fd.get(), from.data() + sent,
                             from.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) {
      to.gone = true;
      from.clear();
      return;
    }
    sent += static_cast<size_t>(n);
  }
  if (to_client) c.down_delivered += sent;
  from.erase(0, sent);
}

void ConnectionRelay::Watch(Connection& c) {
  // Read a side while its bytes have room to go; write a side while bytes
  // wait for it. A side that hung up is out of the set.
  auto watch = [&](Connection::Side& side, const std::string& outgoing,
                   const std::string& incoming) {
    if (side.gone && side.eof) return;
    epoll_event event{.events = 0, .data = {.fd = side.fd.get()}};
    if (!side.eof && outgoing.size() < kRelayBufferBytes) {
      event.events |= EPOLLIN | EPOLLRDHUP;
    }
    if (!incoming.empty() && !side.gone) event.events |= EPOLLOUT;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, side.fd.get(), &event);
  };
  watch(c.client, c.up, c.down);
  watch(c.inner, c.down, c.up);
}

void ConnectionRelay::Close(int client_fd) {
  lingering_.erase(client_fd);
  auto it = connections_.find(client_fd);
  if (it == connections_.end()) return;
  client_of_inner_.erase(it->second->inner.fd.get());
  std::unique_ptr<Connection> c = std::move(it->second);
  connections_.erase(it);
  Closed(std::move(c));
}

void ConnectionRelay::Closed(std::unique_ptr<Connection> c) {
  std::function<void()> on_closed = std::move(c->on_closed);
  c.reset();  // closing a descriptor takes it out of the epoll set
  {
    absl::MutexLock lock(&mu_);
    --open_;
    ++closed_;
  }
  if (on_closed) on_closed();
}

}  // namespace stoker
