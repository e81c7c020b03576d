// The live handles of the C ABI (stoker/stoker_c.h), by address and kind,
// so that a closed handle, a handle closed twice or a handle of another
// kind passed by mistake gets an error code instead of undefined
// behaviour. An address is live from the call that made it until the call
// that frees it; the table never dereferences what it is asked about.
//
// Each handle remembers the process that made it. In a process forked from
// that one (a torch DataLoader worker, a multiprocessing child), the
// handle's threads, connection and ring are the parent's: using it is
// FAILED_PRECONDITION saying so, and closing it only forgets it there.
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
// one, or when it was made in another process (forgotten, not to be
// freed): the caller then must not free it.
bool RemoveHandle(const void* handle, HandleKind kind);

// OK when `handle` is a live handle of `kind` made in this process; else
// INVALID_ARGUMENT naming `what` (NULL, closed already, or a handle of
// another kind), or FAILED_PRECONDITION for one made before a fork.
absl::Status CheckHandle(const void* handle, HandleKind kind, const char* what);

// OK unless this process was forked from one that connected to a daemon
// (gRPC does not survive fork): then FAILED_PRECONDITION saying so.
absl::Status CheckMayConnect();
// Notes that this process connected (before its first connect).
void NoteConnect();

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
