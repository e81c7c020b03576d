// The C ABI's batches (stoker/stoker_c.h): stoker_next, a batch's fields,
// confirming and releasing it.
#include <chrono>
#include <cstddef>

#include "client/src/c_handle_types.h"

namespace {

using stoker::internal::Check;
using stoker::internal::CheckStructSize;
using stoker::internal::Close;
using stoker::internal::Fail;
using stoker::internal::Guard;
using stoker::internal::HandleKind;
using stoker::internal::Live;
using stoker::internal::NullArgument;
using stoker::internal::Track;
using stoker::internal::WriteOut;

int32_t DTypeCode(stoker::DType dtype) {
  switch (dtype) {
    case stoker::DType::kUInt8:
      return STOKER_DTYPE_UINT8;
    case stoker::DType::kFloat32:
      return STOKER_DTYPE_FLOAT32;
    case stoker::DType::kFloat16:
      return STOKER_DTYPE_FLOAT16;
  }
  return -1;
}

// The smallest struct_size each struct accepts: its size in the C ABI
// version that brought it, up to the end of that version's last member
// (fields added later lie past it and keep these numbers).
constexpr size_t kBatchInfoV2 =
    offsetof(stoker_batch_info, index) + sizeof(uint64_t);
constexpr size_t kBatchInfoV3 =
    offsetof(stoker_batch_info, field_count) + sizeof(uint32_t);
constexpr size_t kFieldInfoV3 =
    offsetof(stoker_field_info, row_stride) + sizeof(uint64_t);

// A field of a batch as the C ABI describes it.
stoker_field_info FieldInfo(const stoker::Batch& batch,
                            const stoker::Batch::Field& field) {
  using Kind = stoker::Batch::Field::Kind;
  stoker_field_info info{};
  info.name = field.name.c_str();
  const int64_t n = batch.size();
  switch (field.kind) {
    case Kind::kImage:
      info.kind = STOKER_FIELD_IMAGE;
      info.dtype = DTypeCode(field.image.dtype);
      info.layout = field.image.layout == stoker::Layout::kNHWC
                        ? STOKER_LAYOUT_NHWC
                        : STOKER_LAYOUT_NCHW;
      info.rank = 4;
      for (int i = 0; i < 4; ++i) info.shape[i] = field.image.shape[i];
      info.data = field.image.data;
      info.bytes = field.image.bytes;
      break;
    case Kind::kInt64:
      info.kind = STOKER_FIELD_INT64;
      info.dtype = STOKER_DTYPE_INT64;
      info.rank = 1;
      info.shape[0] = n;
      info.data = field.int64s.data();
      info.bytes = field.int64s.size_bytes();
      break;
    case Kind::kMask:
      info.kind = STOKER_FIELD_MASK;
      info.dtype = STOKER_DTYPE_UINT8;
      info.rank = 3;
      for (int i = 0; i < 3; ++i) info.shape[i] = field.mask_shape[i];
      info.data = field.mask;
      info.bytes = uint64_t(n) * field.mask_shape[1] * field.mask_shape[2];
      break;
    case Kind::kBytes:
      info.kind = STOKER_FIELD_BYTES;
      info.dtype = STOKER_DTYPE_UINT8;
      info.rank = 2;
      info.shape[0] = n;
      info.shape[1] = int64_t(field.row_stride);
      info.data = field.rows;
      info.bytes = uint64_t(n) * field.row_stride;
      info.lengths = field.lengths.data();
      info.row_stride = field.row_stride;
      break;
  }
  return info;
}

}  // namespace

extern "C" {

int stoker_next(stoker_consumer* consumer, int64_t timeout_ms,
                stoker_batch** out, stoker_batch_info* info) {
  return Guard([&]() -> int {
    if (int bad = Live(consumer, HandleKind::kConsumer, "consumer")) {
      return bad;
    }
    if (out == nullptr || info == nullptr) {
      return NullArgument("out or info");
    }
    if (int bad = CheckStructSize(info->struct_size, kBatchInfoV2,
                                  "stoker_batch_info")) {
      return bad;
    }
    absl::StatusOr<stoker::Batch> batch =
        timeout_ms < 0
            ? consumer->consumer->Next()
            : consumer->consumer->Next(std::chrono::milliseconds(timeout_ms));
    if (!batch.ok()) {
      if (stoker::IsNextTimeout(batch.status())) {
        stoker::internal::LastError() = "no batch arrived in time";
        return STOKER_STATUS_NEXT_TIMED_OUT;
      }
      return Fail(batch.status());
    }
    if (info->struct_size < kBatchInfoV3 && batch->labels().empty()) {
      // A caller of ABI 2 would read `labels`; it cannot see fields.
      return Fail(absl::FailedPreconditionError(
          "the job's samples are named fields, without labels: read them "
          "with stoker_batch_field (C ABI version 3; build against its "
          "stoker_c.h)"));
    }
    const stoker::Batch::ImageTensor images = batch->image_tensor();
    stoker_batch_info full{};
    full.images = const_cast<void*>(images.data);
    full.dtype = DTypeCode(images.dtype);
    full.layout = images.layout == stoker::Layout::kNHWC ? STOKER_LAYOUT_NHWC
                                                         : STOKER_LAYOUT_NCHW;
    for (int i = 0; i < 4; ++i) full.shape[i] = images.shape[i];
    full.image_bytes = images.bytes;
    full.labels = batch->labels().data();
    full.indices = batch->indices().data();
    full.size = batch->size();
    full.slot = batch->slot();
    full.epoch = batch->epoch();
    full.index = batch->index();
    full.field_count = uint32_t(batch->fields().size());
    WriteOut(info, full);
    *out = Track(new stoker_batch{*std::move(batch)}, HandleKind::kBatch);
    return STOKER_STATUS_OK;
  });
}

int stoker_batch_check_intact(const stoker_batch* batch) {
  return Guard([&]() -> int {
    if (int bad = Live(batch, HandleKind::kBatch, "batch")) return bad;
    return Check(batch->batch.CheckIntact());
  });
}

void stoker_batch_release(stoker_batch* batch) {
  try {
    Close(batch, HandleKind::kBatch);
  } catch (...) {  // a Batch releases without throwing; be sure of it here
  }
}

int stoker_batch_field(const stoker_batch* batch, uint32_t index,
                       stoker_field_info* out) {
  return Guard([&]() -> int {
    if (int bad = Live(batch, HandleKind::kBatch, "batch")) return bad;
    if (out == nullptr) return NullArgument("out");
    if (int bad = CheckStructSize(out->struct_size, kFieldInfoV3,
                                  "stoker_field_info")) {
      return bad;
    }
    const auto& fields = batch->batch.fields();
    if (index >= fields.size()) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("field ", index, ": the batch has ", fields.size())));
    }
    WriteOut(out, FieldInfo(batch->batch, fields[index]));
    return STOKER_STATUS_OK;
  });
}

}  // extern "C"
