#include "client/src/c_handles.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace stoker::internal {
namespace {

struct Entry {
  HandleKind kind;
  pid_t pid;  // the process that made it
};

// A plain mutex: held across fork() by the forking thread and unlocked in
// both processes after it (pthread_atfork's pattern), so that a child never
// inherits it held by a thread it does not have.
struct Table {
  std::mutex mu;
  absl::flat_hash_map<const void*, Entry> live;  // under mu
};

// The process that first connected (0: none yet); inherited through fork.
std::atomic<pid_t> connected_in{0};

absl::Status Forked(const char* what, pid_t made_in) {
  return absl::FailedPreconditionError(absl::StrCat(
      what, " was made in process ", made_in, ", and this process (",
      ::getpid(),
      ") was forked from it: a forked child cannot use its parent's stoker "
      "handles, nor connect once the parent has (gRPC does not survive "
      "fork); connect in the child before the parent does, or start it "
      "with exec (multiprocessing's 'spawn')"));
}

Table& Handles();
void LockForFork() { Handles().mu.lock(); }
void UnlockAfterFork() { Handles().mu.unlock(); }

// Never destroyed: handles may be closed from exit-time finalizers.
Table& Handles() {
  static Table* const table = [] {
    ::pthread_atfork(LockForFork, UnlockAfterFork, UnlockAfterFork);
    return new Table;
  }();
  return *table;
}

}  // namespace

const char* HandleName(HandleKind kind) {
  switch (kind) {
    case HandleKind::kClient:
      return "stoker_client";
    case HandleKind::kConsumer:
      return "stoker_consumer";
    case HandleKind::kBatch:
      return "stoker_batch";
    case HandleKind::kCopier:
      return "stoker_cuda_copier";
  }
  return "handle";
}

void AddHandle(const void* handle, HandleKind kind) {
  Table& table = Handles();
  std::lock_guard<std::mutex> lock(table.mu);
  table.live[handle] = {kind, ::getpid()};
}

bool LiveHandle(const void* handle, HandleKind kind) {
  Table& table = Handles();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.live.find(handle);
  return it != table.live.end() && it->second.kind == kind &&
         it->second.pid == ::getpid();
}

bool RemoveHandle(const void* handle, HandleKind kind) {
  Table& table = Handles();
  std::lock_guard<std::mutex> lock(table.mu);
  auto it = table.live.find(handle);
  if (it == table.live.end() || it->second.kind != kind) return false;
  const bool ours = it->second.pid == ::getpid();
  table.live.erase(it);
  return ours;
}

absl::Status CheckHandle(const void* handle, HandleKind kind,
                         const char* what) {
  if (handle == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is NULL"));
  }
  {
    Table& table = Handles();
    std::lock_guard<std::mutex> lock(table.mu);
    auto it = table.live.find(handle);
    if (it != table.live.end() && it->second.kind == kind) {
      if (it->second.pid == ::getpid()) return absl::OkStatus();
      return Forked(what, it->second.pid);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not a live ", HandleName(kind),
                   " (closed already, or a handle of another kind)"));
}

absl::Status CheckMayConnect() {
  const pid_t first = connected_in.load();
  if (first == 0 || first == ::getpid()) return absl::OkStatus();
  return Forked("stoker's gRPC connection", first);
}

void NoteConnect() {
  pid_t none = 0;
  connected_in.compare_exchange_strong(none, ::getpid());
}

}  // namespace stoker::internal
