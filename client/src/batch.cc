// Batch: a lease on one slot of a job's ring.
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/src/consumer_core.h"
#include "common/status_macros.h"
#include "stoker/consumer.h"

namespace stoker {

Batch::Batch(Batch&& other) noexcept { *this = std::move(other); }

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    Release();
    core_ = std::move(other.core_);
    slot_ = other.slot_;
    generation_ = other.generation_;
    epoch_ = other.epoch_;
    index_ = other.index_;
    size_ = other.size_;
    image_ = other.image_;
    labels_ = other.labels_;
    indices_ = other.indices_;
    fields_ = std::move(other.fields_);
  }
  return *this;
}

const Batch::Field* Batch::field(std::string_view name) const {
  for (const Field& f : fields_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

Batch::~Batch() { Release(); }

Batch::ImageTensor Batch::image_tensor() const { return image_; }

TensorView<uint8_t> Batch::images() const {
  if (image_.dtype != DType::kUInt8) return {};
  return {static_cast<const uint8_t*>(image_.data), image_.shape, 4};
}

TensorView<float> Batch::images_f32() const {
  if (image_.dtype != DType::kFloat32) return {};
  return {static_cast<const float*>(image_.data), image_.shape, 4};
}

TensorView<uint16_t> Batch::images_f16() const {
  if (image_.dtype != DType::kFloat16) return {};
  return {static_cast<const uint16_t*>(image_.data), image_.shape, 4};
}

absl::Status Batch::CheckIntact() const {
  if (core_ == nullptr) {
    return absl::FailedPreconditionError("the batch was released");
  }
  // Order the caller's reads of the slot before the generation load.
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t now = core_->ring().Generation(slot_);
  // Claims the batch: from here on the daemon never gives it to another
  // consumer; or it already took it back, and says why.
  STOKER_RETURN_IF_ERROR(core_->Confirm(slot_, generation_, epoch_, index_));
  if (now != generation_) {
    // Claimed earlier, then the stream ended and the slot was refilled: the
    // reads since the first confirmation saw another batch.
    return absl::DataLossError(absl::StrCat(
        "slot ", slot_, " was refilled while batch ", index_, " of epoch ",
        epoch_, " was read after it had been confirmed (generation ",
        generation_, ", now ", now,
        "): confirm a batch after reading it, not before"));
  }
  return absl::OkStatus();
}

void Batch::Release() {
  if (core_ == nullptr) return;
  core_->Release(slot_, generation_, epoch_, index_);
  core_.reset();
}

}  // namespace stoker
