// Consumer: one attachment to a job, handing out its batches in order.
#include "stoker/consumer.h"

#include <atomic>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/src/consumer_core.h"
#include "client/src/reconnector.h"
#include "common/batch_wire.h"
#include "common/status_macros.h"
#include "common/vocabulary_wire.h"

namespace stoker {
namespace {

absl::Status BadHandle(absl::string_view name, absl::string_view why) {
  return absl::InternalError(absl::StrCat(
      "the daemon sent a batch handle whose '", name, "' tensor ", why));
}

// Tensor `t`'s bytes, checked to be `bytes` long and inside the handle's
// slot.
absl::StatusOr<const uint8_t*> Locate(const internal::RingMapping& ring,
                                      const v1::BatchHandle& handle,
                                      const v1::TensorLayout& t,
                                      uint64_t bytes) {
  if (t.bytes() != bytes || !ring.InSlot(handle.slot(), t.offset(), bytes)) {
    return BadHandle(t.name(), absl::StrCat("does not fit slot ", handle.slot(),
                                            " of the ring"));
  }
  return ring.view() + t.offset();
}

// An image tensor as the handle describes it (dtype, layout, shape),
// checked for consistency and to lie inside its slot.
absl::StatusOr<Batch::ImageTensor> ImageOf(const internal::RingMapping& ring,
                                           const v1::BatchHandle& handle,
                                           const v1::TensorLayout& t,
                                           int64_t n) {
  Batch::ImageTensor images;
  // A handle names its dtype (UNSPECIFIED is not one).
  const std::optional<DType> dtype = FromWire(t.dtype());
  if (t.dtype() == v1::DTYPE_UNSPECIFIED || !dtype) {
    return BadHandle(t.name(), absl::StrCat("has dtype ", t.dtype()));
  }
  images.dtype = *dtype;
  // A daemon older than the layout field: the channels' place says it.
  const bool nhwc = t.layout() == v1::LAYOUT_UNSPECIFIED
                        ? t.shape(3) == kImageChannels
                        : t.layout() == v1::LAYOUT_NHWC;
  images.layout = nhwc ? Layout::kNHWC : Layout::kNCHW;
  uint64_t values = 1;
  for (int i = 0; i < 4; ++i) {
    if (t.shape(i) <= 0 || t.shape(i) > (int64_t{1} << 20)) {
      return BadHandle(t.name(),
                       absl::StrCat("has dimension ", i, " of ", t.shape(i)));
    }
    images.shape[i] = t.shape(i);
    values *= static_cast<uint64_t>(t.shape(i));
  }
  if (images.shape[0] != n || images.shape[nhwc ? 3 : 1] != kImageChannels) {
    return BadHandle(t.name(), "has a shape that does not match the batch");
  }
  images.bytes = values * DTypeBytes(t.dtype());
  STOKER_ASSIGN_OR_RETURN(images.data, Locate(ring, handle, t, images.bytes));
  return images;
}

// A bytes field: its rows and their lengths (read where they lie, so that
// a reclaimed slot is seen by the generation check, never trusted past a
// row: see Batch::Field::value).
absl::Status BytesOf(const internal::RingMapping& ring,
                     const v1::BatchHandle& handle, const v1::TensorLayout& t,
                     int64_t n, Batch::Field* field) {
  if (t.dtype() != v1::DTYPE_UINT8 || t.shape_size() != 2 || t.shape(0) != n ||
      t.shape(1) < 0 || t.shape(1) > (int64_t{1} << 30)) {
    return BadHandle(t.name(), "is not a [n, row] uint8 tensor");
  }
  field->kind = Batch::Field::Kind::kBytes;
  field->row_stride = uint64_t(t.shape(1));
  STOKER_ASSIGN_OR_RETURN(field->rows,
                          Locate(ring, handle, t, n * field->row_stride));
  const uint64_t lengths = t.variable().lengths_offset();
  if (!ring.InSlot(handle.slot(), lengths, n * sizeof(int64_t))) {
    return BadHandle(t.name(), "has lengths outside its slot");
  }
  field->lengths = {reinterpret_cast<const int64_t*>(ring.view() + lengths),
                    size_t(n)};
  return absl::OkStatus();
}

// One tensor of a handle as a field.
absl::StatusOr<Batch::Field> FieldOf(const internal::RingMapping& ring,
                                     const v1::BatchHandle& handle,
                                     const v1::TensorLayout& t, int64_t n) {
  Batch::Field field;
  field.name = t.name();
  if (t.has_variable()) {
    STOKER_RETURN_IF_ERROR(BytesOf(ring, handle, t, n, &field));
  } else if (t.dtype() == v1::DTYPE_INT64 && t.shape_size() == 1 &&
             t.shape(0) == n) {
    field.kind = Batch::Field::Kind::kInt64;
    STOKER_ASSIGN_OR_RETURN(const uint8_t* data,
                            Locate(ring, handle, t, n * sizeof(int64_t)));
    field.int64s = {reinterpret_cast<const int64_t*>(data), size_t(n)};
  } else if (t.shape_size() == 4) {
    field.kind = Batch::Field::Kind::kImage;
    STOKER_ASSIGN_OR_RETURN(field.image, ImageOf(ring, handle, t, n));
  } else if (t.shape_size() == 3 && t.dtype() == v1::DTYPE_UINT8) {
    field.kind = Batch::Field::Kind::kMask;
    if (t.shape(0) != n || t.shape(1) <= 0 || t.shape(1) > (1 << 20) ||
        t.shape(2) <= 0 || t.shape(2) > (1 << 20)) {
      return BadHandle(t.name(), "is not a [n, H, W] mask");
    }
    for (int i = 0; i < 3; ++i) field.mask_shape[i] = t.shape(i);
    STOKER_ASSIGN_OR_RETURN(
        field.mask,
        Locate(ring, handle, t, uint64_t(n) * t.shape(1) * t.shape(2)));
  } else {
    return BadHandle(t.name(), "is of no kind this SDK knows");
  }
  return field;
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
  Batch batch;
  for (const v1::TensorLayout& t : handle.tensors()) {
    STOKER_ASSIGN_OR_RETURN(Batch::Field field,
                            FieldOf(ring, handle, t, int64_t(n)));
    if (t.name() == kIndicesTensor) {
      batch.indices_ = field.int64s.data();
      continue;
    }
    if (field.kind == Batch::Field::Kind::kImage &&
        batch.image_.data == nullptr) {
      batch.image_ = field.image;
    }
    if (t.name() == kLabelsTensor && spec.fields.empty()) {
      batch.labels_ = field.int64s.data();
    }
    batch.fields_.push_back(std::move(field));
  }
  if (batch.image_.data == nullptr || batch.indices_ == nullptr ||
      (spec.fields.empty() && batch.labels_ == nullptr)) {
    return absl::InternalError(
        "the daemon sent a batch handle without its images, labels or "
        "indices");
  }
  batch.core_ = core;
  batch.slot_ = handle.slot();
  batch.generation_ = handle.generation();
  batch.epoch_ = handle.epoch();
  batch.index_ = handle.batch();
  batch.size_ = static_cast<uint32_t>(n);
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
    auto resumed = reconnector_->Resume(core->tracker(), handle.status());
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
