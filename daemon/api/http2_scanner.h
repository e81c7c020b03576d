// Http2HeaderScanner: reads the frame headers a client sends on an HTTP/2
// connection, for the connection relay (relay.h), and says when the
// connection must end: a header block (a HEADERS frame and its
// CONTINUATION frames) past kMaxHeaderBlockBytes, which gRPC 1.51 would
// buffer without bound (CVE-2023-33953), or more than
// kMaxStreamsBeforeSettingsAck streams opened before the client
// acknowledged the server's SETTINGS.
#ifndef STOKER_DAEMON_API_HTTP2_SCANNER_H_
#define STOKER_DAEMON_API_HTTP2_SCANNER_H_

#include <cstddef>
#include <cstdint>

namespace stoker {

inline constexpr size_t kMaxHeaderBlockBytes = size_t{64} << 10;

// Streams a client may open before it acknowledges the server's SETTINGS
// (gRPC 1.51 enforces its GRPC_ARG_MAX_CONCURRENT_STREAMS only once they
// are acknowledged: 20,000 unread calls of a client that never acknowledged
// grew stokerd by 306 MiB). An acknowledgement counts only once the
// server's SETTINGS reached the client (set_settings_delivered): one sent
// before acknowledges nothing. The daemon's own limit is the same number.
inline constexpr uint32_t kMaxStreamsBeforeSettingsAck = 256;

// Reads a client's side of an HTTP/2 connection (after the 24-byte
// preface) frame header by frame header; false once a header block passes
// kMaxHeaderBlockBytes, or the client opened more than
// kMaxStreamsBeforeSettingsAck streams without acknowledging the server's
// SETTINGS.
class Http2HeaderScanner {
 public:
  bool Feed(const uint8_t* data, size_t size);
  uint64_t largest_block() const { return largest_block_; }
  // Why the last Feed() returned false.
  const char* why() const { return why_; }
  // Whether the server's first SETTINGS frame has reached the client: an
  // acknowledgement counts only after it (one sent before acknowledges
  // nothing, and gRPC would go on without its limit).
  void set_settings_delivered(bool delivered) {
    settings_delivered_ = delivered;
  }

 private:
  void OnFrameHeader();

  size_t preface_left_ = 24;
  uint8_t header_[9] = {};
  size_t header_have_ = 0;
  uint64_t payload_left_ = 0;
  bool in_block_ = false;
  uint64_t block_bytes_ = 0;
  uint64_t largest_block_ = 0;
  bool settings_delivered_ = false;
  bool settings_acked_ = false;
  uint32_t last_stream_ = 0;  // the highest stream id a HEADERS opened
  uint32_t streams_before_ack_ = 0;
  const char* why_ = "";
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_HTTP2_SCANNER_H_
