// Sits between each client connection and gRPC: copies the bytes both
// ways, reading the HTTP/2 frame headers the client sends, and ends a
// connection whose header block (a HEADERS frame and its CONTINUATION
// frames) passes kMaxHeaderBlockBytes, or that opens more than
// kMaxStreamsBeforeSettingsAck streams before acknowledging the server's
// SETTINGS. gRPC 1.51 buffers a header block
// without bound while its CONTINUATION frames keep coming (CVE-2023-33953):
// one connection could make stokerd hold gigabytes.
//
// One thread serves every connection (epoll); the traffic is small, since
// batches travel through shared memory. Each direction buffers at most
// kRelayBufferBytes; past that the relay stops reading that side, and TCP-
// like backpressure reaches the writer. When gRPC closes its end (a bad
// preface, a connection shut for making no call in time, a drain), the
// relay gives the client what gRPC sent before, for at most kRelayLinger,
// then closes the client's end too: a connection is over only when both
// ends are closed, and only then is it released from its user's count.
#ifndef STOKER_DAEMON_API_RELAY_H_
#define STOKER_DAEMON_API_RELAY_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/unique_fd.h"
#include "daemon/api/http2_scanner.h"

namespace stoker {

inline constexpr size_t kRelayBufferBytes = size_t{256} << 10;
inline constexpr absl::Duration kRelayLinger = absl::Seconds(2);

class ConnectionRelay {
 public:
  static absl::StatusOr<std::unique_ptr<ConnectionRelay>> Start();
  ~ConnectionRelay();  // ends every connection
  ConnectionRelay(const ConnectionRelay&) = delete;
  ConnectionRelay& operator=(const ConnectionRelay&) = delete;

  // A connected socket pair: the relay's end, and gRPC's.
  static absl::StatusOr<std::pair<UniqueFd, UniqueFd>> Pair();
  // Relays between `client` and `inner` (the relay's end of a Pair) from
  // now on; `pid` names the client in the log. `on_closed` runs on the
  // relay's thread once both descriptors are closed (not when the relay
  // itself is destroyed).
  void Add(UniqueFd client, UniqueFd inner, pid_t pid,
           std::function<void()> on_closed = nullptr);
  // Connections relayed now (both ends not yet closed), and closed since
  // start.
  size_t open() const;
  uint64_t closed() const;
  // Connections the scanner ended (a header block past the bound, too many
  // streams before the settings were acknowledged), since start.
  uint64_t cut_off() const;

 private:
  struct Connection;
  ConnectionRelay(UniqueFd epoll, UniqueFd wake);
  void Run();
  void TakeNew();
  // Handles `events` on one side; false when the connection is done.
  bool Serve(Connection& c, bool client_side, uint32_t events);
  // Reads what a side sent (while its bytes have room to go, or all of it
  // when `drain`); false if the connection must end.
  bool ReadFrom(Connection& c, bool client_side, bool drain);
  void Flush(Connection& c, bool to_client);
  void Watch(Connection& c);
  void Close(int client_fd);
  // Closes the lingering connections that are done (their client took
  // what was left, or kRelayLinger passed).
  void EndLingering();
  // Closes both of `c`'s descriptors, then runs its on_closed.
  void Closed(std::unique_ptr<Connection> c);

  const UniqueFd epoll_;
  const UniqueFd wake_;  // an eventfd: new connections, or stop
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::deque<std::unique_ptr<Connection>> incoming_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t cut_off_ ABSL_GUARDED_BY(mu_) = 0;
  size_t open_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t closed_ ABSL_GUARDED_BY(mu_) = 0;
  // Owned by the relay's thread: connections by their client descriptor
  // (the inner one maps to the same entry).
  std::map<int, std::unique_ptr<Connection>> connections_;
  std::map<int, int> client_of_inner_;
  std::set<int> lingering_;  // client descriptors whose gRPC end is gone
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_RELAY_H_
