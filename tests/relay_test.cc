// The connection relay in front of gRPC: bytes pass both ways unchanged and
// in order, half-closes travel, and a header block past the bound ends the
// connection; the frame scanner on frames cut at every byte.
#include "daemon/api/relay.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <thread>

#include "daemon/api/answers.h"
#include "gtest/gtest.h"

namespace stoker {
namespace {

std::string Frame(uint8_t type, uint8_t flags, const std::string& payload) {
  const size_t n = payload.size();
  std::string out = {char(n >> 16),
                     char(n >> 8),
                     char(n),
                     char(type),
                     char(flags),
                     0,
                     0,
                     0,
                     1};
  return out + payload;
}

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

TEST(Http2HeaderScanner, CountsEachHeaderBlockAcrossAnySplit) {
  // A block of HEADERS + 3 CONTINUATION of 16,000 bytes passes; a fifth
  // CONTINUATION takes it past 64 KiB. DATA frames in between count
  // nothing, and END_HEADERS starts the count again.
  std::string ok = kPreface + Frame(0x4, 0, "");
  ok += Frame(0x1, 0, std::string(16000, 'h'));
  for (int i = 0; i < 2; ++i) ok += Frame(0x9, 0, std::string(16000, 'c'));
  ok += Frame(0x9, 0x4, std::string(16000, 'c'));  // END_HEADERS
  ok += Frame(0x0, 0, std::string(200000, 'd'));
  ok += Frame(0x1, 0x4, std::string(60000, 'h'));
  for (size_t step : {size_t{1}, size_t{7}, size_t{9}, ok.size()}) {
    Http2HeaderScanner scanner;
    for (size_t at = 0; at < ok.size(); at += step) {
      const size_t n = std::min(step, ok.size() - at);
      ASSERT_TRUE(
          scanner.Feed(reinterpret_cast<const uint8_t*>(ok.data() + at), n))
          << "step " << step << " at " << at;
    }
    EXPECT_EQ(scanner.largest_block(), 64000u);
  }
  std::string flood = kPreface + Frame(0x1, 0, std::string(100, 'h'));
  for (int i = 0; i < 5; ++i) flood += Frame(0x9, 0, std::string(16000, 'c'));
  Http2HeaderScanner scanner;
  EXPECT_FALSE(scanner.Feed(reinterpret_cast<const uint8_t*>(flood.data()),
                            flood.size()));
}

// A connected socket pair: `a` the trainer's end, `b` what stokerd
// accepted (handed to the relay).
struct Pair {
  UniqueFd a, b;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

// Reads until EOF; the bytes.
std::string ReadAll(int fd) {
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n <= 0) return out;
    out.append(buffer, size_t(n));
  }
}

TEST(ConnectionRelay, CopiesBothWaysInOrderAndPassesHalfCloses) {
  auto relay = ConnectionRelay::Start();
  ASSERT_TRUE(relay.ok()) << relay.status();
  Pair client;  // client.a: the trainer; client.b: what stokerd accepted
  auto inner = ConnectionRelay::Pair();
  ASSERT_TRUE(inner.ok());
  UniqueFd grpc_end = std::move(inner->second);
  ::fcntl(grpc_end.get(), F_SETFL, 0);  // blocking, for the test's plain reads
  (*relay)->Add(std::move(client.b), std::move(inner->first), 42);
  // 6 MB each way, well past the relay's buffers, at the same time.
  std::mt19937 random(7);
  std::string up = kPreface, down;
  while (up.size() < 6000000)
    up += Frame(0x0, 0, std::string(9000, char(random())));
  for (int i = 0; i < 6000000; ++i) down += char(random());
  std::string got_up, got_down;
  std::thread server([&] {
    std::thread writer([&] {
      ASSERT_EQ(::write(grpc_end.get(), down.data(), down.size()),
                ssize_t(down.size()));
      ::shutdown(grpc_end.get(), SHUT_WR);
    });
    got_up = ReadAll(grpc_end.get());
    writer.join();
    grpc_end.reset();
  });
  std::thread writer([&] {
    size_t at = 0;
    while (at < up.size()) {
      const ssize_t n = ::write(client.a.get(), up.data() + at, up.size() - at);
      ASSERT_GT(n, 0);
      at += size_t(n);
    }
    ::shutdown(client.a.get(), SHUT_WR);  // gRPC must see the end
  });
  got_down = ReadAll(client.a.get());
  writer.join();
  server.join();
  EXPECT_TRUE(got_up == up)
      << got_up.size() << " of " << up.size() << ", first difference at "
      << std::mismatch(got_up.begin(), got_up.end(), up.begin()).first -
             got_up.begin();
  EXPECT_TRUE(got_down == down) << got_down.size() << " of " << down.size();
  EXPECT_EQ((*relay)->cut_off(), 0u);
}

TEST(ConnectionRelay, AHeaderBlockPastTheBoundEndsTheConnection) {
  auto relay = ConnectionRelay::Start();
  ASSERT_TRUE(relay.ok()) << relay.status();
  Pair client;
  auto inner = ConnectionRelay::Pair();
  ASSERT_TRUE(inner.ok());
  UniqueFd grpc_end = std::move(inner->second);
  ::fcntl(grpc_end.get(), F_SETFL, 0);
  (*relay)->Add(std::move(client.b), std::move(inner->first), 42);
  std::string flood = kPreface + Frame(0x1, 0, std::string(100, 'h'));
  for (int i = 0; i < 8; ++i) flood += Frame(0x9, 0, std::string(16000, 'c'));
  ASSERT_EQ(::write(client.a.get(), flood.data(), flood.size()),
            ssize_t(flood.size()));
  // Both ends see the connection end; gRPC never got the whole block.
  const std::string seen = ReadAll(grpc_end.get());
  EXPECT_LT(seen.size(), kMaxHeaderBlockBytes + 16000 + 200);
  EXPECT_EQ(ReadAll(client.a.get()), "");
  EXPECT_EQ((*relay)->cut_off(), 1u);
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

std::string StreamFrame(uint8_t type, uint8_t flags, uint32_t stream) {
  return {0,
          0,
          0,
          char(type),
          char(flags),
          char(stream >> 24),
          char(stream >> 16),
          char(stream >> 8),
          char(stream)};
}

// gRPC 1.51 applies its stream limit only once the client acknowledged the
// server's SETTINGS: the relay ends a connection that opens more than
// kMaxStreamsBeforeSettingsAck streams before that; after it, any number
// (gRPC's own limit holds), and a HEADERS frame on an open stream counts
// nothing.
TEST(Http2HeaderScanner, StreamsBeforeTheSettingsAckAreBounded) {
  std::string ok = kPreface;
  for (uint32_t i = 0; i < kMaxStreamsBeforeSettingsAck; ++i) {
    ok += StreamFrame(0x1, 0x4, 2 * i + 1);
    ok += StreamFrame(0x1, 0x4, 2 * i + 1);  // trailers: not a new stream
  }
  Http2HeaderScanner scanner;
  EXPECT_TRUE(
      scanner.Feed(reinterpret_cast<const uint8_t*>(ok.data()), ok.size()));
  const std::string one_more = StreamFrame(0x1, 0x4, 100001);
  Http2HeaderScanner flooded = scanner;
  EXPECT_FALSE(flooded.Feed(reinterpret_cast<const uint8_t*>(one_more.data()),
                            one_more.size()));
  EXPECT_NE(std::string(flooded.why()).find("SETTINGS"), std::string::npos);
  // An acknowledgement before the server's SETTINGS reached the client
  // acknowledges nothing.
  Http2HeaderScanner early = scanner;
  const std::string early_ack = StreamFrame(0x4, 0x1, 0) + one_more;
  EXPECT_FALSE(early.Feed(reinterpret_cast<const uint8_t*>(early_ack.data()),
                          early_ack.size()));
  scanner.set_settings_delivered(true);
  std::string acked = StreamFrame(0x4, 0x1, 0);  // SETTINGS with ACK
  for (uint32_t i = 0; i < 1000; ++i)
    acked += StreamFrame(0x1, 0x4, 200001 + 2 * i);
  EXPECT_TRUE(scanner.Feed(reinterpret_cast<const uint8_t*>(acked.data()),
                           acked.size()));
}

// Reads on `fd` fail after 10 s instead of waiting for ever.
void SetReadTimeout(int fd) {
  const timeval limit{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
}

// When gRPC closes its end (a bad preface, a connection shut for making no
// call in time), the relay closes the client's end too, and only then is
// the connection released (before, the relay kept both descriptors until
// the client closed, uncounted: one user held 384 with the limit at 64).
TEST(ConnectionRelay, GrpcClosingItsEndClosesTheClientsAndReleasesIt) {
  auto relay = ConnectionRelay::Start();
  ASSERT_TRUE(relay.ok()) << relay.status();
  Pair client;
  auto inner = ConnectionRelay::Pair();
  ASSERT_TRUE(inner.ok());
  std::atomic<int> released = 0;
  (*relay)->Add(std::move(client.b), std::move(inner->first), 42,
                [&released] { ++released; });
  UniqueFd grpc_end = std::move(inner->second);
  SetReadTimeout(client.a.get());  // a regression fails, never hangs
  const std::string goodbye = "goodbye";
  ASSERT_EQ(::write(grpc_end.get(), goodbye.data(), goodbye.size()),
            ssize_t(goodbye.size()));
  EXPECT_EQ((*relay)->open(), 1u);
  grpc_end.reset();  // the client never closes nor writes
  // What gRPC sent before closing arrives, then the end.
  EXPECT_EQ(ReadAll(client.a.get()), goodbye);
  for (int i = 0; i < 200 && released == 0; ++i) ::usleep(5000);
  EXPECT_EQ(released, 1);
  EXPECT_EQ((*relay)->open(), 0u);
  EXPECT_EQ((*relay)->closed(), 1u);
}

// What gRPC sent before closing reaches a client that reads it late (up
// to kRelayLinger): more than the client's socket holds at once.
TEST(ConnectionRelay, AClientReadingLateGetsWhatGrpcSentBeforeClosing) {
  auto relay = ConnectionRelay::Start();
  ASSERT_TRUE(relay.ok()) << relay.status();
  Pair client;
  SetReadTimeout(client.a.get());
  auto inner = ConnectionRelay::Pair();
  ASSERT_TRUE(inner.ok());
  UniqueFd grpc_end = std::move(inner->second);
  ::fcntl(grpc_end.get(), F_SETFL, 0);
  (*relay)->Add(std::move(client.b), std::move(inner->first), 42);
  const std::string answer(3 << 20, 'a');  // past both sockets' buffers
  std::thread writer([&] {
    size_t at = 0;
    while (at < answer.size()) {
      const ssize_t n =
          ::write(grpc_end.get(), answer.data() + at, answer.size() - at);
      if (n <= 0) break;
      at += size_t(n);
    }
    grpc_end.reset();
  });
  ::usleep(300 * 1000);  // the client reads late
  EXPECT_EQ(ReadAll(client.a.get()).size(), answer.size());
  writer.join();
}

// gRPC half-closing (its writing side only) is not the end: the client's
// requests still reach it.
TEST(ConnectionRelay, GrpcHalfClosingKeepsTheConnection) {
  auto relay = ConnectionRelay::Start();
  ASSERT_TRUE(relay.ok()) << relay.status();
  Pair client;
  auto inner = ConnectionRelay::Pair();
  ASSERT_TRUE(inner.ok());
  UniqueFd grpc_end = std::move(inner->second);
  ::fcntl(grpc_end.get(), F_SETFL, 0);
  SetReadTimeout(client.a.get());
  SetReadTimeout(grpc_end.get());
  (*relay)->Add(std::move(client.b), std::move(inner->first), 42);
  ::shutdown(grpc_end.get(), SHUT_WR);
  EXPECT_EQ(ReadAll(client.a.get()), "");  // the half-close travels
  ASSERT_EQ(::write(client.a.get(), kPreface.data(), kPreface.size()),
            ssize_t(kPreface.size()));
  ::shutdown(client.a.get(), SHUT_WR);
  EXPECT_EQ(ReadAll(grpc_end.get()), kPreface);
}

// Answers in flight are counted per user: one user at its bound is refused,
// another is not, and the bound lifts as its answers are taken.
TEST(AnswerLedger, BoundsEachUserApart) {
  AnswerLedger ledger(100);
  EXPECT_TRUE(ledger.MayAnswer(1000));
  ledger.Add(1000, 60);
  EXPECT_TRUE(ledger.MayAnswer(1000));  // under the bound: one more
  ledger.Add(1000, 60);
  EXPECT_FALSE(ledger.MayAnswer(1000));
  EXPECT_TRUE(ledger.MayAnswer(1001));
  EXPECT_EQ(ledger.held(1000), 120u);
  ledger.Remove(1000, 60);
  EXPECT_TRUE(ledger.MayAnswer(1000));
  ledger.Remove(1000, 60);
  ledger.Remove(1000, 60);  // more than held: stays at zero
  EXPECT_EQ(ledger.held(1000), 0u);
}

}  // namespace
}  // namespace stoker
