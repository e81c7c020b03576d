#include "daemon/jobs/sample_worker.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace stoker {

absl::Status SampleWorker::DecodeImage(const JobConfig& config,
                                       std::span<const uint8_t> bytes,
                                       uint64_t key, const SlotRow& out,
                                       size_t t) {
  if (config.views.empty()) {
    return decoder_.ProcessBytes(bytes, config.pipeline, key, out.Tensor(t));
  }
  std::array<uint8_t*, kMaxViews> outs;
  const size_t n = std::min(config.views.size(), outs.size());
  for (size_t v = 0; v < n; ++v) outs[v] = out.Tensor(t + v);
  return decoder_.ProcessViews(bytes, std::span(config.views).first(n), key,
                               std::span(outs).first(n));
}

absl::Status SampleWorker::FillField(const JobConfig& config, size_t f,
                                     uint64_t job_serial,
                                     const DatasetIndex& index, uint32_t sample,
                                     uint64_t key, const SlotRow& out) {
  const FieldConfig& field = config.fields[f];
  const size_t t = FirstTensor(config, f);
  if (field.role == FieldRole::kLabel) {
    *reinterpret_cast<int64_t*>(out.Tensor(t)) = index.label(sample);
    return absl::OkStatus();
  }
  if (index.store(f) != FieldStore::kFile) {
    const FieldValue value = index.Value(sample, f);
    if (!value.present) {
      return absl::InvalidArgumentError(absl::StrCat(
          "has no ", index.store(f) == FieldStore::kMember ? "member" : "value",
          " for field '", field.name, "' (missing=error)"));
    }
    // A bytes value past its bound fails before it is read.
    const uint64_t size = index.store(f) == FieldStore::kText
                              ? value.text.size()
                              : value.range.size;
    if (field.role == FieldRole::kBytes &&
        (size > config.max_field_bytes ||
         size > out.layout->tensors[t].row_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field '", field.name, "' holds ", size,
          " bytes, more than max_field_bytes (", config.max_field_bytes, ")"));
    }
  }
  absl::StatusOr<std::span<const uint8_t>> bytes =
      reader_.Read(job_serial, index, sample, uint32_t(f));
  if (!bytes.ok()) return bytes.status();
  if (field.role == FieldRole::kImage || field.role == FieldRole::kMask) {
    absl::Status decoded =
        field.role == FieldRole::kImage
            ? DecodeImage(config, *bytes, key, out, t)
            : decoder_.ProcessMask(*bytes, config.pipeline, config.mask_fill,
                                   config.mask_tensor_nearest, out.Tensor(t));
    if (decoded.ok() || !config.named_fields) return decoded;
    return absl::Status(decoded.code(), absl::StrCat("field '", field.name,
                                                     "': ", decoded.message()));
  }
  // A bytes field is a member or a text, its size checked above.
  if (!bytes->empty()) std::memcpy(out.Tensor(t), bytes->data(), bytes->size());
  *out.Length(t) = int64_t(bytes->size());
  return absl::OkStatus();
}

absl::Status SampleWorker::Fill(const JobConfig& config, uint64_t job_serial,
                                const DatasetIndex& index, uint32_t sample,
                                uint64_t key, const SlotRow& out) {
  absl::Status status;
  // A mask follows its image's draws: the image first.
  for (const bool masks : {false, true}) {
    for (size_t f = 0; f < config.fields.size() && status.ok(); ++f) {
      if ((config.fields[f].role == FieldRole::kMask) == masks) {
        status = FillField(config, f, job_serial, index, sample, key, out);
      }
    }
  }
  if (status.ok()) *out.Index() = sample;
  if (decoder_.TrimScratch(reader_.buffer_bytes())) reader_.FreeBuffer();
  return status;
}

}  // namespace stoker
