// The CUDA copy path of an SDK built without the CUDA Toolkit.
#include "stoker/cuda.h"

namespace stoker {

class CudaCopier::Impl {};

bool CudaCopier::Available() { return false; }

absl::StatusOr<std::unique_ptr<CudaCopier>> CudaCopier::Create(Consumer&, int) {
  return absl::UnimplementedError(
      "this stoker SDK was built without CUDA (STOKER_WITH_CUDA=OFF or no "
      "CUDA Toolkit found); read batches on the CPU with Batch::images()");
}

CudaCopier::CudaCopier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCopier::~CudaCopier() = default;

absl::Status CudaCopier::CopyAsync(Batch, void*, void*, CUstream_st*) {
  return absl::UnimplementedError("built without CUDA");
}

absl::Status CudaCopier::Drain() { return absl::OkStatus(); }

bool CudaCopier::pinned() const { return false; }

}  // namespace stoker
