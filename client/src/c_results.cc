// What the C ABI's functions return: see c_results.h.
#include "client/src/c_results.h"

#include <google/protobuf/util/json_util.h>

#include <cstdlib>

namespace stoker::internal {
namespace {

thread_local std::string last_error;

char* CopyOut(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace

std::string& LastError() { return last_error; }

int Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  return static_cast<int>(status.code());
}

int Check(const absl::Status& status) {
  return status.ok() ? STOKER_STATUS_OK : Fail(status);
}

int NullArgument(const char* what) {
  return Fail(absl::InvalidArgumentError(absl::StrCat(what, " is NULL")));
}

int WriteJson(const google::protobuf::Message& message, char** out) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status =
      google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return Fail(absl::InternalError(
        absl::StrCat("cannot write JSON: ", std::string(status.message()))));
  }
  *out = CopyOut(json);
  return *out != nullptr ? STOKER_STATUS_OK
                         : Fail(absl::ResourceExhaustedError("out of memory"));
}

int CheckStructSize(uint32_t size, size_t minimum, const char* name) {
  if (size >= minimum) return STOKER_STATUS_OK;
  return Fail(absl::InvalidArgumentError(
      absl::StrCat(name, ".struct_size is ", size, ": set it to sizeof(", name,
                   ") (at least ", minimum, " bytes)")));
}

static_assert(STOKER_STATUS_INVALID_ARGUMENT ==
              static_cast<int>(absl::StatusCode::kInvalidArgument));
static_assert(STOKER_STATUS_UNAUTHENTICATED ==
              static_cast<int>(absl::StatusCode::kUnauthenticated));

}  // namespace stoker::internal
