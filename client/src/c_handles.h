// The live handles of the C ABI (stoker/stoker_c.h), by address and kind,
// so that a closed handle, a handle closed twice or a handle of another
// kind passed by mistake gets an error code instead of undefined
// behaviour. An address is live from the call that made it until the call
// that frees it; the table never dereferences what it is asked about.
#ifndef STOKER_CLIENT_SRC_C_HANDLES_H_
#define STOKER_CLIENT_SRC_C_HANDLES_H_

#include "absl/status/status.h"

namespace stoker::internal {

enum class HandleKind { kClient, kConsumer, kBatch, kCopier };

// "stoker_client" and so on, for messages.
const char* HandleName(HandleKind kind);

// Records a new handle.
void AddHandle(const void* handle, HandleKind kind);
// Whether `handle` is live and of `kind`.
bool LiveHandle(const void* handle, HandleKind kind);
// Forgets a live handle of `kind`; false (and nothing done) when it is not
// one: the caller then must not free it.
bool RemoveHandle(const void* handle, HandleKind kind);

// OK when `handle` is a live handle of `kind`; else INVALID_ARGUMENT naming
// `what`: NULL, closed already, or a handle of another kind.
absl::Status CheckHandle(const void* handle, HandleKind kind, const char* what);

// A new handle, recorded as live.
template <typename Handle>
Handle* Track(Handle* handle, HandleKind kind) {
  AddHandle(handle, kind);
  return handle;
}

// Deletes a live handle of `kind`; anything else is left alone (closing
// twice, or closing a handle of another kind, does nothing).
template <typename Handle>
void Close(Handle* handle, HandleKind kind) {
  if (handle != nullptr && RemoveHandle(handle, kind)) delete handle;
}

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_C_HANDLES_H_
