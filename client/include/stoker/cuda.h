// CudaCopier: batches from the ring to GPU memory without blocking the
// trainer and without an extra host copy.
//
// Create() registers the consumer's ring with CUDA once (page-locked,
// read-only, cudaHostRegister), so copies from it are true asynchronous DMA.
// CopyAsync() enqueues the copies of a batch into device memory on the
// caller's stream and takes over the batch's lease; the lease is released by
// the SDK once the copy has completed on the GPU (a host function enqueued
// after the copies only queues the batch for release; an SDK thread checks
// the slot's generation and releases it). The caller never waits.
//
//   auto copier = stoker::CudaCopier::Create(*consumer);
//   if (!copier.ok()) { /* no GPU: use batch->images() on the CPU */ }
//   auto batch = consumer->Next();
//   (*copier)->CopyAsync(*std::move(batch), d_images, d_labels, stream);
//   launch_training_step<<<..., stream>>>(d_images, d_labels);
//
// Without a CUDA device at run time Create() returns FAILED_PRECONDITION
// saying so; in an SDK built without CUDA it returns UNIMPLEMENTED. The CPU
// path works either way.
//
// Thread-safety: CopyAsync() and Drain() from one thread at a time. One
// CudaCopier per Consumer; it must not outlive the Consumer.
#ifndef STOKER_CUDA_H_
#define STOKER_CUDA_H_

#include <memory>

#include "absl/status/statusor.h"
#include "stoker/consumer.h"

// cudaStream_t is `struct CUstream_st*`; declaring it here keeps the CUDA
// headers out of this one.
struct CUstream_st;

namespace stoker {

class STOKER_API CudaCopier {
 public:
  // Registers `consumer`'s ring with CUDA on `device`; -1: the current
  // device of the SDK's CUDA runtime (libstoker.so links its own, so a
  // trainer using another device than 0 names it here).
  static absl::StatusOr<std::unique_ptr<CudaCopier>> Create(Consumer& consumer,
                                                            int device = -1);
  // True when this SDK was built with CUDA support.
  static bool Available();

  // Waits for the copies in flight, releases their batches, unregisters.
  ~CudaCopier();
  CudaCopier(const CudaCopier&) = delete;
  CudaCopier& operator=(const CudaCopier&) = delete;

  // Enqueues on `stream` the copy of the batch's images
  // (image_tensor().bytes bytes; a job of named fields: its image field) to
  // `device_images` and, unless null, of its labels (size() x int64) to
  // `device_labels` (a job of named fields has none: INVALID_ARGUMENT). Returns
  // at once; the batch is confirmed (Batch::CheckIntact) and released after the
  // copy completes. A batch whose lease the daemon already took back is refused
  // with its reason; one taken back during the copy makes the next CopyAsync()
  // or Drain() return the reason (the copied data must not be used).
  absl::Status CopyAsync(Batch batch, void* device_images, void* device_labels,
                         CUstream_st* stream);

  // Blocks until every copy enqueued so far has completed and its batch has
  // been released; returns the first error seen since the last call.
  absl::Status Drain();

  // True if the ring is page-locked; false if the device cannot register
  // read-only memory and copies go through pageable memory (slower).
  bool pinned() const;

  class STOKER_LOCAL Impl;  // internal

 private:
  explicit CudaCopier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker

#endif  // STOKER_CUDA_H_
