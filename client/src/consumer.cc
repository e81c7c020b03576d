// Consumer: one attachment to a job, handing out its batches in order.
#include "stoker/consumer.h"

#include <atomic>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/src/consumer_core.h"
#include "common/batch_wire.h"
#include "common/status_macros.h"
#include "common/vocabulary_wire.h"

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

// The images of a handle as it describes them (dtype, layout, shape),
// checked for consistency and to lie inside its slot.
absl::StatusOr<Batch::ImageTensor> ImagesOf(const internal::RingMapping& ring,
                                            const v1::BatchHandle& handle,
                                            int64_t n) {
  const v1::TensorLayout* t = FindTensor(handle, kImagesTensor);
  const auto bad = [&](absl::string_view why) {
    return absl::InternalError(
        absl::StrCat("the daemon sent a batch handle whose images ", why));
  };
  if (t == nullptr) return bad("are missing");
  Batch::ImageTensor images;
  // A handle names its dtype (UNSPECIFIED is not one).
  const std::optional<DType> dtype = FromWire(t->dtype());
  if (t->dtype() == v1::DTYPE_UNSPECIFIED || !dtype) {
    return bad(absl::StrCat("have dtype ", t->dtype()));
  }
  images.dtype = *dtype;
  if (t->shape_size() != 4) return bad("are not a 4-d tensor");
  // A daemon older than the layout field: the channels' place says it.
  const bool nhwc = t->layout() == v1::LAYOUT_UNSPECIFIED
                        ? t->shape(3) == kImageChannels
                        : t->layout() == v1::LAYOUT_NHWC;
  images.layout = nhwc ? Layout::kNHWC : Layout::kNCHW;
  uint64_t values = 1;
  for (int i = 0; i < 4; ++i) {
    if (t->shape(i) <= 0 || t->shape(i) > (int64_t{1} << 20)) {
      return bad(absl::StrCat("have dimension ", i, " of ", t->shape(i)));
    }
    images.shape[i] = t->shape(i);
    values *= static_cast<uint64_t>(t->shape(i));
  }
  if (images.shape[0] != n || images.shape[nhwc ? 3 : 1] != kImageChannels) {
    return bad("have a shape that does not match the batch");
  }
  images.bytes = values * DTypeBytes(t->dtype());
  STOKER_ASSIGN_OR_RETURN(const uint8_t* data,
                          Locate(ring, handle, kImagesTensor, images.bytes));
  images.data = data;
  return images;
}

}  // namespace

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
      !absl::SimpleAtoi(absl::string_view(rest.data(), colon),
                        &position.epoch) ||
      !absl::SimpleAtoi(
          absl::string_view(rest.data() + colon + 1, rest.size() - colon - 1),
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

// The batch `handle` names in `core`'s ring, checked against the spec.
absl::StatusOr<Batch> Consumer::BatchOf(
    const std::shared_ptr<internal::ConsumerCore>& core,
    const v1::BatchHandle& handle) {
  const internal::RingMapping& ring = core->ring();
  const JobSpec& spec = core->job().spec;
  const uint64_t n = handle.sample_count();
  if (n == 0 || n > spec.batch_size) {
    return absl::InternalError(
        absl::StrCat("the daemon sent a batch of ", n, " samples"));
  }
  // The handle says what the tensors are; the SDK checks, not re-derives.
  auto images = ImagesOf(ring, handle, static_cast<int64_t>(n));
  if (!images.ok()) return images.status();
  const uint64_t index_bytes = n * DTypeBytes(v1::DTYPE_INT64);
  auto labels = Locate(ring, handle, kLabelsTensor, index_bytes);
  auto indices = Locate(ring, handle, kIndicesTensor, index_bytes);
  for (const auto* located : {&labels, &indices}) {
    if (!located->ok()) return located->status();
  }
  Batch batch;
  batch.core_ = core;
  batch.slot_ = handle.slot();
  batch.generation_ = handle.generation();
  batch.epoch_ = handle.epoch();
  batch.index_ = handle.batch();
  batch.size_ = static_cast<uint32_t>(n);
  batch.image_ = *images;
  batch.labels_ = reinterpret_cast<const int64_t*>(*labels);
  batch.indices_ = reinterpret_cast<const int64_t*>(*indices);
  const uint64_t now = ring.Generation(batch.slot_);
  if (now != batch.generation_ || !core->Live(batch.slot_, batch.generation_)) {
    batch.core_.reset();  // not ours to release any more
    // The daemon took the lease back because it ended this consumer: say
    // why it did, not what that did to the slot.
    return core->VoidReason(batch.epoch_, batch.index_);
  }
  return batch;
}

absl::StatusOr<Batch> Consumer::Next(std::chrono::milliseconds timeout) {
  const absl::Time deadline = timeout == std::chrono::milliseconds::max()
                                  ? absl::InfiniteFuture()
                                  : absl::Now() + absl::FromChrono(timeout);
  std::shared_ptr<internal::ConsumerCore> core = this->core();
  // A batch used without confirmation after its lease was taken back.
  STOKER_RETURN_IF_ERROR(core->TakeUnreported());
  absl::StatusOr<v1::BatchHandle> handle = core->NextHandle(deadline);
  while (!handle.ok() && absl::IsUnavailable(handle.status()) &&
         reconnector_ != nullptr &&
         reconnector_->options().reconnect_timeout.count() > 0) {
    // Resuming would deliver the unconfirmed batches again: one the trainer
    // still holds is void, and it must hear so before it goes on.
    STOKER_RETURN_IF_ERROR(core->Abandon(handle.status()));
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
  absl::StatusOr<Batch> batch = BatchOf(core, *handle);
  if (batch.ok()) {
    core->HandedOut(batch->slot_, batch->generation_,
                    BatchSequence(batch->epoch_, batch->index_,
                                  core->job().batches_per_epoch));
  }
  return batch;
}

}  // namespace stoker
