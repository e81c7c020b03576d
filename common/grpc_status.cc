#include "common/grpc_status.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/safe_text.h"

namespace stoker {

namespace {

// Back from `at` to the start of a UTF-8 character.
size_t CharStart(std::string_view text, size_t at) {
  while (at > 0 && at < text.size() && (uint8_t(text[at]) & 0xC0) == 0x80) {
    --at;
  }
  return at;
}

}  // namespace

std::string CutInTheMiddle(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  const size_t keep = max_bytes > 64 ? max_bytes - 64 : max_bytes / 2;
  const size_t head = CharStart(text, keep * 2 / 3);
  const size_t tail = CharStart(text, text.size() - (keep - keep * 2 / 3));
  std::string out(text.substr(0, head));
  absl::StrAppend(&out, "...[", tail - head, " bytes cut]...");
  out.append(text.substr(tail));
  return out;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // Messages name files and jobs: escaped, so every client can read them,
  // and bounded, so that every client receives them.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      CutInTheMiddle(SafeText(std::string(status.message())),
                                     kMaxStatusMessageBytes));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace stoker
