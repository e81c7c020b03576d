// Batch and Consumer: leases on ring slots.
#include <atomic>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/src/consumer_core.h"
#include "stoker/consumer.h"

namespace stoker {
namespace {

const v1::TensorLayout* FindTensor(const v1::BatchHandle& handle,
                                   absl::string_view name) {
  for (const v1::TensorLayout& t : handle.tensors()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// The tensor `name`, checked to be `bytes` long and inside the handle's slot.
absl::StatusOr<const uint8_t*> Locate(const internal::RingMapping& ring,
                                      const v1::BatchHandle& handle,
                                      absl::string_view name, uint64_t bytes) {
  const v1::TensorLayout* t = FindTensor(handle, name);
  if (t == nullptr || t->bytes() != bytes ||
      !ring.InSlot(handle.slot(), t->offset(), t->bytes())) {
    return absl::InternalError(absl::StrCat(
        "the daemon sent a batch handle whose '", name,
        "' tensor does not fit slot ", handle.slot(), " of the ring"));
  }
  return ring.view() + t->offset();
}

}  // namespace

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
  }
  return *this;
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
  if (now != generation_) {
    return absl::DataLossError(absl::StrCat(
        "slot ", slot_, " was reclaimed while batch ", index_, " of epoch ",
        epoch_, " was read (generation ", generation_, ", now ", now,
        "): its data must not be used"));
  }
  return absl::OkStatus();
}

void Batch::Release() {
  if (core_ == nullptr) return;
  core_->Release(slot_, generation_, epoch_, index_);
  core_.reset();
}

Consumer::Consumer(std::shared_ptr<internal::ConsumerCore> core,
                   std::unique_ptr<internal::Reconnector> reconnector)
    : core_(std::move(core)), reconnector_(std::move(reconnector)) {}

Consumer::~Consumer() { core()->Close(); }

std::shared_ptr<internal::ConsumerCore> Consumer::core() const {
  std::lock_guard<std::mutex> lock(mu_);
  return core_;
}

JobInfo Consumer::job() const { return core()->job(); }

Position Consumer::position() const { return core()->position(); }

InputStats Consumer::input_stats() const { return core()->input_stats(); }

std::string SerializePosition(const Position& position) {
  return absl::StrCat("stoker-position:", position.epoch, ":", position.batch);
}

absl::StatusOr<Position> ParsePosition(std::string_view text) {
  constexpr std::string_view kPrefix = "stoker-position:";
  Position position;
  const std::string_view rest =
      text.starts_with(kPrefix) ? text.substr(kPrefix.size()) : "";
  const size_t colon = rest.find(':');
  if (colon == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(rest.data(), colon), &position.epoch) ||
      !absl::SimpleAtoi(absl::string_view(rest.data() + colon + 1,
                                          rest.size() - colon - 1),
                        &position.batch)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", std::string(text),
        "' is not a stoker position (stoker-position:<epoch>:<batch>)"));
  }
  return position;
}

bool IsNextTimeout(const absl::Status& status) {
  return absl::IsDeadlineExceeded(status) &&
         status.GetPayload(internal::kNextTimeoutPayload).has_value();
}

absl::StatusOr<Batch> Consumer::Next() {
  return Next(std::chrono::milliseconds::max());
}

absl::StatusOr<Batch> Consumer::Next(std::chrono::milliseconds timeout) {
  const absl::Time deadline =
      timeout == std::chrono::milliseconds::max()
          ? absl::InfiniteFuture()
          : absl::Now() + absl::FromChrono(timeout);
  std::shared_ptr<internal::ConsumerCore> core = this->core();
  absl::StatusOr<v1::BatchHandle> handle = core->NextHandle(deadline);
  while (!handle.ok() && absl::IsUnavailable(handle.status()) &&
         reconnector_ != nullptr &&
         reconnector_->options().reconnect_timeout.count() > 0) {
    core->Close();
    auto resumed = reconnector_->Resume(*core, handle.status());
    if (!resumed.ok()) return resumed.status();
    {
      std::lock_guard<std::mutex> lock(mu_);
      core_ = *resumed;
    }
    core = *std::move(resumed);
    handle = core->NextHandle(deadline);
  }
  if (!handle.ok()) return handle.status();
  const internal::RingMapping& ring = core->ring();
  const JobSpec& spec = core->job().spec;
  const uint64_t n = handle->sample_count();
  if (n == 0 || n > spec.batch_size) {
    return absl::InternalError(
        absl::StrCat("the daemon sent a batch of ", n, " samples"));
  }
  const int64_t h = spec.height, w = spec.width;
  const size_t value_bytes = spec.dtype == DType::kUInt8     ? 1
                             : spec.dtype == DType::kFloat16 ? 2
                                                             : 4;
  auto images = Locate(ring, *handle, "images", n * h * w * 3 * value_bytes);
  auto labels = Locate(ring, *handle, "labels", n * sizeof(int64_t));
  auto indices = Locate(ring, *handle, "indices", n * sizeof(int64_t));
  for (const auto* located : {&images, &labels, &indices}) {
    if (!located->ok()) return located->status();
  }
  Batch batch;
  batch.core_ = core;
  batch.slot_ = handle->slot();
  batch.generation_ = handle->generation();
  batch.epoch_ = handle->epoch();
  batch.index_ = handle->batch();
  batch.size_ = static_cast<uint32_t>(n);
  const Layout layout = spec.layout.value_or(Layout::kNHWC);
  batch.image_ = {*images, spec.dtype, layout,
                  layout == Layout::kNHWC
                      ? std::array<int64_t, 4>{int64_t(n), h, w, 3}
                      : std::array<int64_t, 4>{int64_t(n), 3, h, w},
                  n * h * w * 3 * value_bytes};
  batch.labels_ = reinterpret_cast<const int64_t*>(*labels);
  batch.indices_ = reinterpret_cast<const int64_t*>(*indices);
  const uint64_t now = ring.Generation(batch.slot_);
  if (now != batch.generation_) {
    const absl::Status stale = absl::DataLossError(absl::StrCat(
        "slot ", batch.slot_, " was reclaimed before batch ", batch.index_,
        " of epoch ", batch.epoch_, " could be read (generation ",
        batch.generation_, ", now ", now, ")"));
    batch.core_.reset();  // not ours to release any more
    return stale;
  }
  return batch;
}

}  // namespace stoker
