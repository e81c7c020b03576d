// What the C ABI's functions return (stoker/stoker_c.h): status codes with
// the calling thread's last error, JSON strings out, and structs sized by
// their caller. Shared by the files of the C ABI.
#ifndef STOKER_CLIENT_SRC_C_RESULTS_H_
#define STOKER_CLIENT_SRC_C_RESULTS_H_

#include <google/protobuf/message.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "stoker/stoker_c.h"

namespace stoker::internal {

// The calling thread's last error sentence (stoker_last_error).
std::string& LastError();

// Records `status`'s message as the last error; its code.
int Fail(const absl::Status& status);
// STOKER_STATUS_OK for OK, else Fail(status).
int Check(const absl::Status& status);
// INVALID_ARGUMENT: "<what> is NULL".
int NullArgument(const char* what);

// Runs `body`, turning an escaping C++ exception (a thread that cannot be
// started, memory exhausted) into INTERNAL: none may cross the C ABI.
template <typename Body>
int Guard(Body body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(absl::StrCat("libstoker: ", e.what())));
  } catch (...) {
    return Fail(absl::InternalError("libstoker: unknown exception"));
  }
}

// `message` as JSON (the proto field names) in a malloc'd *out.
int WriteJson(const google::protobuf::Message& message, char** out);

// A call's wire message as JSON in *out, or its error.
template <typename Message>
int WriteResult(const absl::StatusOr<Message>& result, char** out) {
  if (!result.ok()) return Fail(result.status());
  return WriteJson(*result, out);
}

// STOKER_STATUS_OK if a caller's struct_size holds at least `minimum`
// bytes, else INVALID_ARGUMENT saying what to set.
int CheckStructSize(uint32_t size, size_t minimum, const char* name);

// Copies `full` into the caller's out struct, no more of it than the
// caller's struct_size holds; struct_size keeps the caller's value.
template <typename Struct>
void WriteOut(Struct* out, Struct full) {
  full.struct_size = out->struct_size;
  std::memcpy(out, &full, std::min<size_t>(out->struct_size, sizeof(Struct)));
}

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_C_RESULTS_H_
