#include "client/src/c_handles.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace stoker::internal {
namespace {

struct Table {
  absl::Mutex mu;
  absl::flat_hash_map<const void*, HandleKind> live ABSL_GUARDED_BY(mu);
};

// Never destroyed: handles may be closed from exit-time finalizers.
Table& Handles() {
  static Table* const table = new Table;
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
  absl::MutexLock lock(&table.mu);
  table.live[handle] = kind;
}

bool LiveHandle(const void* handle, HandleKind kind) {
  Table& table = Handles();
  absl::MutexLock lock(&table.mu);
  auto it = table.live.find(handle);
  return it != table.live.end() && it->second == kind;
}

bool RemoveHandle(const void* handle, HandleKind kind) {
  Table& table = Handles();
  absl::MutexLock lock(&table.mu);
  auto it = table.live.find(handle);
  if (it == table.live.end() || it->second != kind) return false;
  table.live.erase(it);
  return true;
}

absl::Status CheckHandle(const void* handle, HandleKind kind,
                         const char* what) {
  if (handle == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is NULL"));
  }
  if (LiveHandle(handle, kind)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is not a live ", HandleName(kind),
                   " (closed already, or a handle of another kind)"));
}

}  // namespace stoker::internal
