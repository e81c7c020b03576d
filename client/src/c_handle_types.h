// What each handle of the C ABI (stoker/stoker_c.h) holds, for the files
// that implement it (stoker_c.cc, stoker_c_batch.cc).
#ifndef STOKER_CLIENT_SRC_C_HANDLE_TYPES_H_
#define STOKER_CLIENT_SRC_C_HANDLE_TYPES_H_

#include <memory>

#include "client/src/c_handles.h"
#include "client/src/c_results.h"
#include "stoker/client.h"
#include "stoker/consumer.h"
#include "stoker/cuda.h"
#include "stoker/stoker_c.h"

struct stoker_client {
  std::unique_ptr<stoker::Client> client;
};
struct stoker_consumer {
  std::unique_ptr<stoker::Consumer> consumer;
};
struct stoker_batch {
  stoker::Batch batch;
};
struct stoker_cuda_copier {
  std::unique_ptr<stoker::CudaCopier> copier;
};

namespace stoker::internal {

// 0 when `handle` is a live handle of `kind`, else the error code.
inline int Live(const void* handle, HandleKind kind, const char* what) {
  return Check(CheckHandle(handle, kind, what));
}

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_C_HANDLE_TYPES_H_
