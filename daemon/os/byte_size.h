// ByteSize: a number of bytes as a command-line flag, written "8G", "512M",
// "64k" or plain "1048576" (powers of 1024; "0" is zero).
#ifndef STOKER_DAEMON_OS_BYTE_SIZE_H_
#define STOKER_DAEMON_OS_BYTE_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace stoker {

struct ByteSize {
  uint64_t bytes = 0;
};

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);
std::string FormatByteSize(uint64_t bytes);  // "8G", "1536M", "1000"

// For ABSL_FLAG(ByteSize, ...).
bool AbslParseFlag(absl::string_view text, ByteSize* size, std::string* error);
std::string AbslUnparseFlag(ByteSize size);

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_BYTE_SIZE_H_
