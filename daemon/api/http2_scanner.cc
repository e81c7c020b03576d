#include "daemon/api/http2_scanner.h"

#include <algorithm>

namespace stoker {
namespace {

constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kSettings = 0x4;
constexpr uint8_t kContinuation = 0x9;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kAck = 0x1;

}  // namespace

bool Http2HeaderScanner::Feed(const uint8_t* data, size_t size) {
  while (size > 0) {
    if (preface_left_ > 0) {
      const size_t n = std::min(preface_left_, size);
      preface_left_ -= n;
      data += n;
      size -= n;
    } else if (payload_left_ > 0) {
      const size_t n =
          static_cast<size_t>(std::min<uint64_t>(payload_left_, size));
      payload_left_ -= n;
      data += n;
      size -= n;
    } else {
      header_[header_have_++] = *data++;
      --size;
      if (header_have_ == sizeof(header_)) {
        header_have_ = 0;
        OnFrameHeader();
        if (block_bytes_ > kMaxHeaderBlockBytes) {
          why_ =
              "a header block of more than 64 KiB (a flood of "
              "CONTINUATION frames)";
          return false;
        }
        if (streams_before_ack_ > kMaxStreamsBeforeSettingsAck) {
          why_ =
              "more than 256 streams opened without acknowledging the "
              "server's SETTINGS";
          return false;
        }
      }
    }
  }
  return true;
}

void Http2HeaderScanner::OnFrameHeader() {
  const uint64_t length =
      uint64_t{header_[0]} << 16 | uint64_t{header_[1]} << 8 | header_[2];
  const uint8_t type = header_[3];
  const uint8_t flags = header_[4];
  const uint32_t stream =
      (uint32_t{header_[5]} << 24 | uint32_t{header_[6]} << 16 |
       uint32_t{header_[7]} << 8 | header_[8]) &
      0x7fffffffu;
  payload_left_ = length;
  if (type == kSettings && (flags & kAck) && settings_delivered_) {
    settings_acked_ = true;
  }
  if (type == kHeaders && stream > last_stream_) {  // a new stream
    last_stream_ = stream;
    if (!settings_acked_) ++streams_before_ack_;
  }
  if (type == kHeaders) {
    block_bytes_ = length;
    in_block_ = !(flags & kEndHeaders);
  } else if (type == kContinuation && in_block_) {
    block_bytes_ += length;
    in_block_ = !(flags & kEndHeaders);
  } else if (type == kContinuation) {
    block_bytes_ = length;  // a protocol error gRPC will see: counted alike
  }
  largest_block_ = std::max(largest_block_, block_bytes_);
}

}  // namespace stoker
