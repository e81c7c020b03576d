// Sizes in bytes as people write them in flags and files: "8G", "512M",
// "64k" or plain "1048576" (powers of 1024; "0" is zero).
#ifndef STOKER_DAEMON_OS_BYTE_SIZE_H_
#define STOKER_DAEMON_OS_BYTE_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace stoker {

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);
std::string FormatByteSize(uint64_t bytes);  // "8G", "1536M", "1000"

}  // namespace stoker

#endif  // STOKER_DAEMON_OS_BYTE_SIZE_H_
