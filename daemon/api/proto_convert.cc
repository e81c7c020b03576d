#include "daemon/api/proto_convert.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/batch_wire.h"
#include "common/grpc_status.h"
#include "common/safe_text.h"
#include "common/vocabulary_wire.h"
#include "daemon/spec/job_spec.h"
#include "daemon/spec/pipeline_proto.h"

namespace stoker {
namespace {

v1::TensorLayout* AddTensor(const std::string& name, v1::DType dtype,
                            std::initializer_list<int64_t> shape,
                            uint64_t offset, uint64_t bytes,
                            v1::BatchHandle* out) {
  v1::TensorLayout* t = out->add_tensors();
  t->set_name(name);
  t->set_dtype(dtype);
  for (int64_t d : shape) t->add_shape(d);
  t->set_offset(offset);
  t->set_bytes(bytes);
  return t;
}

double InputBoundPercent(uint64_t wait_us, uint64_t step_us) {
  const uint64_t total = wait_us + step_us;
  return total == 0 ? 0 : 100.0 * static_cast<double>(wait_us) / total;
}

// Appends the job's class names from `offset` until they would pass
// `max_bytes` (one at least, whatever its size: a name is at most a path
// component, 255 bytes before escaping).
void AddClassNames(const Job& job, uint64_t offset, size_t max_bytes,
                   google::protobuf::RepeatedPtrField<std::string>* out) {
  const std::vector<std::string>& names = job.dataset().class_names;
  size_t bytes = 0;
  for (uint64_t i = offset; i < names.size(); ++i) {
    std::string name = SafeText(names[i]);
    bytes += name.size() + 3;  // the field's tag and length
    if (bytes > max_bytes && i > offset) break;
    out->Add(std::move(name));
  }
}

}  // namespace

void ClassNamesToProto(const Job& job, uint64_t offset, v1::ClassNames* out) {
  AddClassNames(job, offset, kClassNamesPageBytes, out->mutable_class_names());
  out->set_num_classes(job.dataset().class_names.size());
}

FetchAccess FetchAccessOf(const v1::RemoteAccess& remote) {
  return {.endpoint_url = remote.endpoint_url(),
          .region = remote.region(),
          .path_style = remote.path_style(),
          .access_key_id = remote.access_key_id(),
          .secret_access_key = remote.secret_access_key(),
          .session_token = remote.session_token()};
}

void JobToProto(const Job& job, v1::Job* out) {
  out->set_id(job.id());
  *out->mutable_spec() = EffectiveSpec(job.config());
  // The resolved path may hold any bytes a symlink's target did.
  v1::DatasetSpec* dataset = out->mutable_spec()->mutable_dataset();
  dataset->set_path(SafeText(dataset->path()));
  dataset->set_manifest(SafeText(dataset->manifest()));
  for (std::string& shard : *dataset->mutable_shards()) {
    shard = SafeText(shard);
  }
  dataset->set_label_field(SafeText(dataset->label_field()));
  const JobState state = job.state();
  out->set_state(ToWire(state));
  if (state == JobState::kFailed) {
    out->set_error(SafeText(std::string(job.error().message())));
  }
  out->set_num_samples(job.dataset().samples);
  out->set_dataset_kind(ToWire(job.dataset().kind));
  out->set_num_shards(job.dataset().shards);
  out->set_index_bytes(job.dataset().index_bytes);
  out->set_samples_skipped(job.dataset().skipped);
  AddClassNames(job, 0, kJobClassNameBytes, out->mutable_class_names());
  out->set_num_classes(job.dataset().class_names.size());
  out->set_batches_per_epoch(job.batches_per_epoch());
  v1::SegmentInfo* segment = out->mutable_segment();
  segment->set_name(job.segment_name());
  segment->set_bytes(job.geometry().segment_bytes);
  segment->set_slots(job.geometry().slot_count);
  segment->set_slot_bytes(job.geometry().slot.slot_bytes);
  out->set_owner_uid(job.config().owner_uid);
}

void CountersToProto(const Job& job, const JobCounters& c, v1::JobStats* out) {
  out->set_job_id(job.id());
  out->set_name(SafeText(job.config().name));
  out->set_dataset_kind(ToWire(job.dataset().kind));
  out->set_num_shards(job.dataset().shards);
  out->set_owner(SafeText(job.config().owner));
  out->set_state(ToWire(c.state));
  out->set_samples_decoded(c.samples_decoded);
  out->set_batches_delivered(c.batches_delivered);
  out->set_batches_released(c.batches_released);
  out->set_decode_errors(c.decode_errors);
  for (const SampleErrorRecord& e : c.errors) {
    v1::SampleError* error = out->add_errors();
    error->set_path(CutInTheMiddle(SafeText(e.path), kStatsTextBytes));
    error->set_reason(CutInTheMiddle(SafeText(e.reason), kStatsTextBytes));
  }
  out->set_filling_slots(c.filling_slots);
  out->set_ready_slots(c.ready_slots);
  out->set_leased_slots(c.leased_slots);
  const uint32_t slots = job.geometry().slot_count;
  out->set_slots(slots);
  out->set_slot_bytes(job.geometry().slot.slot_bytes);
  out->set_ring_bytes(job.geometry().segment_bytes);
  out->set_ring_occupancy_percent(
      100.0 * (c.filling_slots + c.ready_slots + c.leased_slots) / slots);
  out->set_decoded_per_second(c.decoded_per_second);
  out->set_delivered_per_second(c.delivered_per_second);
  out->set_worker_busy_us(c.worker_busy_ns / 1000);
  out->set_weight(job.config().weight);
  out->set_owner_uid(job.config().owner_uid);
  out->set_mode(ToWire(job.config().sharing.mode));
  out->set_consumers(static_cast<uint32_t>(c.consumers.size()));
  for (const ConsumerCounters& k : c.consumers) {
    v1::ConsumerStats* s = out->add_consumer();
    s->set_id(k.id);
    s->set_name(SafeText(k.name));
    s->set_client(k.client);
    s->set_batches_delivered(k.delivered);
    s->set_batches_released(k.released);
    s->set_batches_skipped(k.skipped);
    s->set_leased(k.leased);
    s->set_lag(k.lag);
    s->set_wait_us(k.report.wait_us);
    s->set_step_us(k.report.step_us);
    s->set_input_bound_percent(
        k.reported ? InputBoundPercent(k.report.wait_us, k.report.step_us)
                   : -1);
    s->set_recent_input_bound_percent(
        k.reported ? InputBoundPercent(k.report.recent_wait_us,
                                       k.report.recent_step_us)
                   : -1);
  }
}

// A batch of `n` images of `p`'s output at `offset`.
static void AddImageTensor(const std::string& name, const Pipeline& p,
                           int64_t n, uint64_t offset, v1::BatchHandle* out) {
  const int64_t h = p.output.height;
  const int64_t w = p.output.width;
  const uint64_t bytes = n * p.BytesPerImage();
  if (p.layout == Layout::kNHWC) {
    AddTensor(name, ToWire(p.dtype), {n, h, w, kImageChannels}, offset, bytes,
              out)
        ->set_layout(v1::LAYOUT_NHWC);
  } else {
    AddTensor(name, ToWire(p.dtype), {n, kImageChannels, h, w}, offset, bytes,
              out)
        ->set_layout(v1::LAYOUT_NCHW);
  }
}

void DeliveredToHandle(const Job& job, const Delivered& batch,
                       v1::BatchHandle* out) {
  const RingGeometry& g = job.geometry();
  const JobConfig& config = job.config();
  const int64_t n = batch.sample_count;
  const uint64_t base = g.SlotOffset(batch.slot);
  out->set_slot(batch.slot);
  out->set_generation(batch.generation);
  out->set_epoch(batch.epoch);
  out->set_batch(batch.batch);
  out->set_sample_count(batch.sample_count);
  const std::span<const Pipeline> views = ImagePipelines(config);
  size_t t = 0;  // the slot tensor
  for (const FieldConfig& field : config.fields) {
    if (field.role == FieldRole::kImage) {
      for (size_t v = 0; v < views.size(); ++v, ++t) {
        const std::string name = config.views.empty()
                                     ? field.name
                                     : absl::StrCat(field.name, ".", v);
        AddImageTensor(name, views[v], n, base + g.slot.tensors[t].offset, out);
      }
      continue;
    }
    const SlotTensor& place = g.slot.tensors[t++];
    const uint64_t offset = base + place.offset;
    const uint64_t bytes = n * place.row_bytes;
    if (field.role == FieldRole::kLabel) {
      AddTensor(field.name, v1::DTYPE_INT64, {n}, offset, bytes, out);
    } else if (field.role == FieldRole::kMask) {
      const ImageSize o = config.pipeline.output;
      AddTensor(field.name, v1::DTYPE_UINT8, {n, o.height, o.width}, offset,
                bytes, out);
    } else {
      AddTensor(field.name, v1::DTYPE_UINT8, {n, int64_t(place.row_bytes)},
                offset, bytes, out)
          ->mutable_variable()
          ->set_lengths_offset(base + place.lengths_offset);
    }
  }
  AddTensor(kIndicesTensor, v1::DTYPE_INT64, {n}, base + g.slot.indices_offset,
            n * DTypeBytes(v1::DTYPE_INT64), out);
}

}  // namespace stoker
