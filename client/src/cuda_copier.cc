// The CUDA copy path (built when CMake finds the CUDA Toolkit).
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/src/consumer_core.h"
#include "stoker/cuda.h"

namespace stoker {
namespace {

absl::Status CudaError(absl::string_view what, cudaError_t error) {
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

// Why no GPU can be used, in words that name the cause: the CUDA runtime's
// "driver version is insufficient" also means "there is no driver at all",
// which would send a user after a driver upgrade on a machine without GPU.
std::string NoDeviceReason(cudaError_t error) {
  if (error == cudaSuccess) return "the NVIDIA driver reports no GPU";
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver == nullptr) {
      return "no NVIDIA driver or GPU was found on this machine (libcuda.so.1 "
             "is not installed)";
    }
    ::dlclose(driver);
    if (error == cudaErrorNoDevice) {
      return "the NVIDIA driver is installed but finds no GPU";
    }
    int driver_version = 0;
    cudaDriverGetVersion(&driver_version);
    return absl::StrCat("the NVIDIA driver supports CUDA up to ",
                        driver_version / 1000, ".", driver_version % 1000 / 10,
                        " but this SDK was built for CUDA ",
                        CUDART_VERSION / 1000, ".", CUDART_VERSION % 1000 / 10,
                        ": update the driver");
  }
  return cudaGetErrorString(error);
}

// Makes `device` current on this thread until destroyed, then restores the
// device that was current.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    error_ = previous_ == device ? cudaSuccess : cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  cudaError_t error_ = cudaSuccess;
};

}  // namespace

class STOKER_LOCAL CudaCopier::Impl {
 public:
  struct Pending {
    Impl* owner;
    Batch batch;
  };

  Impl(std::shared_ptr<internal::ConsumerCore> core, int device, bool pinned)
      : core_(std::move(core)), device_(device), pinned_(pinned) {
    completer_ = std::thread(&Impl::Complete, this);
  }

  ~Impl() {
    Drain().IgnoreError();
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    completer_.join();
    if (pinned_) {
      // Tolerates the runtime being unloaded at process exit.
      const DeviceScope scope(device_);
      cudaHostUnregister(const_cast<uint8_t*>(core_->ring().data()));
    }
  }

  // A CUDA host function: must not call CUDA; only queues.
  static void CUDART_CB OnCopied(void* data) {
    auto* pending = static_cast<Pending*>(data);
    Impl* self = pending->owner;
    absl::MutexLock lock(&self->mu_);
    self->done_.push_back(pending);
  }

  absl::Status CopyAsync(Batch batch, void* images, void* labels,
                         cudaStream_t stream) {
    if (!batch.valid()) {
      return absl::InvalidArgumentError("CopyAsync of an invalid batch");
    }
    // A batch whose lease was taken back is another consumer's now.
    if (!batch.core_->Live(batch.slot_, batch.generation_)) {
      return batch.core_->VoidReason(batch.epoch_, batch.index_);
    }
    if (absl::Status earlier = TakeError(); !earlier.ok()) return earlier;
    if (labels != nullptr && batch.labels().empty()) {
      return absl::InvalidArgumentError(
          "the job's samples are named fields, without labels: pass no "
          "device_labels");
    }
    const auto images_in_batch = std::count_if(
        batch.fields().begin(), batch.fields().end(),
        [](const auto& f) { return f.kind == Batch::Field::Kind::kImage; });
    if (images_in_batch > 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the batch holds ", images_in_batch,
          " views of each image; CopyAsync copies one image tensor: copy "
          "each view from Batch::fields()"));
    }
    const Batch::ImageTensor view = batch.image_tensor();
    // The stream's device, current on this thread for the copy only: the
    // SDK's CUDA runtime may be another copy than the trainer's, and the
    // trainer's current device must not change under it.
    const DeviceScope scope(device_);
    cudaError_t error = scope.error();
    if (error == cudaSuccess) {
      error = cudaMemcpyAsync(images, view.data, view.bytes,
                              cudaMemcpyHostToDevice, stream);
    }
    if (error == cudaSuccess && labels != nullptr) {
      error = cudaMemcpyAsync(labels, batch.labels().data(),
                              batch.labels().size_bytes(),
                              cudaMemcpyHostToDevice, stream);
    }
    auto* pending = new Pending{this, std::move(batch)};
    {
      absl::MutexLock lock(&mu_);
      ++in_flight_;
    }
    if (error == cudaSuccess) {
      error = cudaLaunchHostFunc(stream, &Impl::OnCopied, pending);
      if (error == cudaSuccess) return absl::OkStatus();
    }
    // Whatever was enqueued must finish before the slot goes back.
    cudaStreamSynchronize(stream);
    OnCopied(pending);
    return CudaError("enqueueing the batch copy", error);
  }

  absl::Status Drain() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Impl* self)
             ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->in_flight_ == 0; },
        this));
    return std::exchange(error_, absl::OkStatus());
  }

  bool pinned() const { return pinned_; }

 private:
  absl::Status TakeError() {
    absl::MutexLock lock(&mu_);
    return std::exchange(error_, absl::OkStatus());
  }

  void Complete() {
    for (;;) {
      Pending* pending;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](Impl* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return self->stop_ || !self->done_.empty();
            },
            this));
        if (done_.empty()) return;
        pending = done_.front();
        done_.pop_front();
      }
      // The DMA has read the slot: was it still ours all along?
      absl::Status intact = pending->batch.CheckIntact();
      delete pending;  // releases the batch
      absl::MutexLock lock(&mu_);
      if (!intact.ok() && error_.ok()) error_ = intact;
      --in_flight_;
    }
  }

  const std::shared_ptr<internal::ConsumerCore> core_;
  const int device_;
  const bool pinned_;
  std::thread completer_;

  absl::Mutex mu_;
  std::deque<Pending*> done_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

bool CudaCopier::Available() { return true; }

absl::StatusOr<std::unique_ptr<CudaCopier>> CudaCopier::Create(
    Consumer& consumer, int device) {
  int devices = 0;
  if (const cudaError_t error = cudaGetDeviceCount(&devices);
      error != cudaSuccess || devices == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device is available: ", NoDeviceReason(error),
                     "; read batches on the CPU with Batch::images() instead"));
  }
  if (device >= devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", device, " does not exist (", devices, " devices)"));
  }
  if (device < 0) cudaGetDevice(&device);
  const DeviceScope scope(device);
  if (scope.error() != cudaSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use CUDA device ", device, ": ",
                     cudaGetErrorString(scope.error())));
  }
  int read_only_ok = 0;
  cudaDeviceGetAttribute(&read_only_ok,
                         cudaDevAttrHostRegisterReadOnlySupported, device);
  const std::shared_ptr<internal::ConsumerCore> core = consumer.core();
  const internal::RingMapping& ring = core->ring();
  if (ring.private_view()) {
    return absl::FailedPreconditionError(
        "a copy_on_write consumer's batches are not in the registered "
        "ring; attach without ConsumerOptions::copy_on_write for GPU copies");
  }
  bool pinned = false;
  if (read_only_ok) {
    // The mapping is read-only, so it can only be registered read-only.
    const cudaError_t error =
        cudaHostRegister(const_cast<uint8_t*>(ring.data()), ring.size(),
                         cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (error == cudaErrorHostMemoryAlreadyRegistered) {
      return absl::FailedPreconditionError(
          "this consumer's ring is already registered: use one CudaCopier "
          "per Consumer");
    }
    pinned = error == cudaSuccess;
    if (!pinned) cudaGetLastError();  // clear it; copies stay pageable
  }
  return std::unique_ptr<CudaCopier>(
      new CudaCopier(std::make_unique<Impl>(core, device, pinned)));
}

CudaCopier::CudaCopier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaCopier::~CudaCopier() = default;

absl::Status CudaCopier::CopyAsync(Batch batch, void* device_images,
                                   void* device_labels, CUstream_st* stream) {
  return impl_->CopyAsync(std::move(batch), device_images, device_labels,
                          stream);
}

absl::Status CudaCopier::Drain() { return impl_->Drain(); }

bool CudaCopier::pinned() const { return impl_->pinned(); }

}  // namespace stoker
