#include "daemon/proto_convert.h"

#include <string>

#include "daemon/job_spec.h"
#include "daemon/pipeline_proto.h"

namespace stoker {
namespace {

v1::JobState StateOf(JobPhase phase) {
  switch (phase) {
    case JobPhase::kRunning:
      return v1::JOB_STATE_RUNNING;
    case JobPhase::kFinished:
      return v1::JOB_STATE_FINISHED;
    case JobPhase::kFailed:
    case JobPhase::kDeleted:
      return v1::JOB_STATE_FAILED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

void AddTensor(const char* name, v1::DType dtype,
               std::initializer_list<int64_t> shape, uint64_t offset,
               uint64_t bytes, v1::BatchHandle* out) {
  v1::TensorLayout* t = out->add_tensors();
  t->set_name(name);
  t->set_dtype(dtype);
  for (int64_t d : shape) t->add_shape(d);
  t->set_offset(offset);
  t->set_bytes(bytes);
}

}  // namespace

void JobToProto(const Job& job, v1::Job* out) {
  out->set_id(job.id());
  *out->mutable_spec() = EffectiveSpec(job.config());
  const JobPhase phase = job.phase();
  out->set_state(StateOf(phase));
  if (phase == JobPhase::kFailed || phase == JobPhase::kDeleted) {
    out->set_error(std::string(job.error().message()));
  }
  out->set_num_samples(job.dataset().samples.size());
  for (const std::string& name : job.dataset().class_names) {
    out->add_class_names(name);
  }
  out->set_batches_per_epoch(job.batches_per_epoch());
  v1::SegmentInfo* segment = out->mutable_segment();
  segment->set_name(job.segment_name());
  segment->set_bytes(job.geometry().segment_bytes);
  segment->set_slots(job.geometry().slot_count);
  segment->set_slot_bytes(job.geometry().slot.slot_bytes);
}

void CountersToProto(const Job& job, const JobCounters& c, v1::JobStats* out) {
  out->set_job_id(job.id());
  out->set_state(StateOf(c.phase));
  out->set_samples_decoded(c.samples_decoded);
  out->set_batches_delivered(c.batches_delivered);
  out->set_batches_released(c.batches_released);
  out->set_decode_errors(c.decode_errors);
  for (const SampleErrorRecord& e : c.errors) {
    v1::SampleError* error = out->add_errors();
    error->set_path(e.path);
    error->set_reason(e.reason);
  }
  out->set_ready_slots(c.ready_slots);
  out->set_leased_slots(c.leased_slots);
  out->set_consumers(c.consumers);
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
  const Pipeline& p = config.pipeline;
  const int64_t h = p.output.height;
  const int64_t w = p.output.width;
  const v1::DType dtype = ImageDTypeToProto(p.dtype);
  const uint64_t image_bytes = n * p.BytesPerImage();
  if (p.layout == OutputLayout::kNHWC) {
    AddTensor("images", dtype, {n, h, w, kImageChannels},
              base + g.slot.images_offset, image_bytes, out);
  } else {
    AddTensor("images", dtype, {n, kImageChannels, h, w},
              base + g.slot.images_offset, image_bytes, out);
  }
  AddTensor("labels", v1::DTYPE_INT64, {n}, base + g.slot.labels_offset,
            n * sizeof(int64_t), out);
  AddTensor("indices", v1::DTYPE_INT64, {n}, base + g.slot.indices_offset,
            n * sizeof(int64_t), out);
}

}  // namespace stoker
