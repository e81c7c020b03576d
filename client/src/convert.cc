#include "client/src/convert.h"

#include <algorithm>

#include "absl/strings/str_split.h"
#include "client/src/op_convert.h"
#include "common/vocabulary_wire.h"

namespace stoker::internal {
namespace {

void OutputToProto(DType dtype, const std::optional<Layout>& layout,
                   bool scale_reciprocal, v1::OutputSpec* out) {
  out->set_dtype(ToWire(dtype));
  if (layout) out->set_layout(ToWire(*layout));
  if (scale_reciprocal) out->set_float_scale(v1::FLOAT_SCALE_RECIPROCAL);
}

ImageView ViewFrom(const v1::View& view) {
  ImageView v;
  for (const v1::Op& op : view.pipeline()) {
    if (auto parsed = OpFromProto(op)) v.pipeline.push_back(*parsed);
  }
  v.height = view.output().height();
  v.width = view.output().width();
  v.dtype = FromWire(view.output().dtype()).value_or(DType::kUInt8);
  v.layout = FromWire(view.output().layout());
  v.scale_reciprocal =
      view.output().float_scale() == v1::FLOAT_SCALE_RECIPROCAL;
  return v;
}

JobSpec SpecFrom(const v1::JobSpec& p) {
  JobSpec spec;
  spec.dataset_path = p.dataset().path();
  spec.shards.assign(p.dataset().shards().begin(), p.dataset().shards().end());
  spec.label_field = p.dataset().label_field();
  if (p.dataset().has_streaming()) spec.streaming = p.dataset().streaming();
  spec.shuffle_window = p.dataset().shuffle_window();
  spec.manifest = p.dataset().manifest();
  spec.batch_size = p.batch_size();
  spec.slots = p.slots();
  for (const v1::Op& op : p.pipeline()) {
    if (auto parsed = OpFromProto(op)) spec.pipeline.push_back(*parsed);
  }
  spec.height = p.output().height();
  spec.width = p.output().width();
  spec.dtype = FromWire(p.output().dtype()).value_or(DType::kUInt8);
  spec.layout = FromWire(p.output().layout());
  spec.scale_reciprocal =
      p.output().float_scale() == v1::FLOAT_SCALE_RECIPROCAL;
  for (const v1::View& view : p.views()) spec.views.push_back(ViewFrom(view));
  spec.reference_pillow = p.reference().pillow();
  spec.reference_numpy = p.reference().numpy();
  spec.seed = p.seed();
  spec.shuffle = !p.has_shuffle() || p.shuffle();
  spec.drop_last = p.drop_last();
  spec.epochs = p.epochs();
  spec.on_error = FromWire(p.on_error()).value_or(OnError::kReplace);
  spec.name = p.name();
  spec.rank = p.rank();
  spec.world_size = p.world_size() == 0 ? 1 : p.world_size();
  spec.shard_drop_last = p.shard_drop_last();
  spec.start = {p.start_epoch(), p.start_batch()};
  spec.sharing.mode =
      FromWire(p.sharing().mode()).value_or(ConsumerMode::kExclusive);
  spec.sharing.max_lag = p.sharing().max_lag();
  spec.sharing.on_lag =
      FromWire(p.sharing().on_lag()).value_or(LagPolicy::kDetach);
  spec.sharing.min_consumers =
      std::max<uint32_t>(p.sharing().min_consumers(), 1);
  spec.weight = std::max<uint32_t>(p.weight(), 1);
  spec.access_group = p.access_group();
  spec.fast_resample = p.fast_resample();
  spec.repeated_augmentations = p.repeated_augmentations();
  for (const v1::SampleField& f : p.fields()) {
    spec.fields.push_back({f.name(),
                           {f.source().begin(), f.source().end()},
                           FromWire(f.kind()).value_or(FieldKind::kAuto)});
  }
  spec.missing = FromWire(p.missing()).value_or(MissingField::kError);
  spec.max_field_bytes = p.max_field_bytes();
  if (p.has_mask_fill()) spec.mask_fill = uint8_t(p.mask_fill());
  spec.mask_tensor_nearest = p.mask_tensor_nearest();
  return spec;
}

void FieldsToProto(const JobSpec& spec, v1::JobSpec* p) {
  for (const SampleField& field : spec.fields) {
    v1::SampleField* f = p->add_fields();
    f->set_name(field.name);
    for (const std::string& source : field.source) f->add_source(source);
    f->set_kind(ToWire(field.kind));
  }
  // Without fields, only what is not their default (the daemon refuses it).
  if (!spec.fields.empty() || spec.missing != MissingField::kError) {
    p->set_missing(ToWire(spec.missing));
  }
  p->set_max_field_bytes(spec.max_field_bytes);
  const bool mask = std::any_of(
      spec.fields.begin(), spec.fields.end(),
      [](const SampleField& f) { return f.kind == FieldKind::kMask; });
  if (mask) {
    p->set_mask_fill(spec.mask_fill);
    p->set_mask_tensor_nearest(spec.mask_tensor_nearest);
  }
}

}  // namespace

v1::JobSpec ToProto(const JobSpec& spec) {
  v1::JobSpec p;
  v1::DatasetSpec* dataset = p.mutable_dataset();
  dataset->set_path(spec.dataset_path);
  for (const std::string& shard : spec.shards) dataset->add_shards(shard);
  dataset->set_label_field(spec.label_field);
  if (spec.streaming) dataset->set_streaming(*spec.streaming);
  dataset->set_shuffle_window(spec.shuffle_window);
  dataset->set_manifest(spec.manifest);
  p.set_batch_size(spec.batch_size);
  p.set_slots(spec.slots);
  if (spec.views.empty()) {
    for (const Op& op : spec.pipeline) OpToProto(op, p.add_pipeline());
    if (spec.pipeline.empty()) {  // with a pipeline, it sets the size
      p.mutable_output()->set_height(spec.height);
      p.mutable_output()->set_width(spec.width);
    }
    OutputToProto(spec.dtype, spec.layout, spec.scale_reciprocal,
                  p.mutable_output());
  }
  for (const ImageView& view : spec.views) {
    v1::View* out = p.add_views();
    for (const Op& op : view.pipeline) OpToProto(op, out->add_pipeline());
    out->mutable_output()->set_height(view.height);
    out->mutable_output()->set_width(view.width);
    OutputToProto(view.dtype, view.layout, view.scale_reciprocal,
                  out->mutable_output());
  }
  if (!spec.reference_pillow.empty()) {
    p.mutable_reference()->set_pillow(spec.reference_pillow);
  }
  if (!spec.reference_numpy.empty()) {
    p.mutable_reference()->set_numpy(spec.reference_numpy);
  }
  p.set_seed(spec.seed);
  p.set_shuffle(spec.shuffle);
  p.set_drop_last(spec.drop_last);
  p.set_epochs(spec.epochs);
  p.set_on_error(ToWire(spec.on_error));
  p.set_name(spec.name);
  p.set_rank(spec.rank);
  p.set_world_size(spec.world_size);
  p.set_shard_drop_last(spec.shard_drop_last);
  p.set_start_epoch(spec.start.epoch);
  p.set_start_batch(spec.start.batch);
  v1::SharingSpec* sharing = p.mutable_sharing();
  sharing->set_mode(ToWire(spec.sharing.mode));
  if (spec.sharing.mode == ConsumerMode::kBroadcast) {
    sharing->set_max_lag(spec.sharing.max_lag);
    sharing->set_on_lag(ToWire(spec.sharing.on_lag));
    sharing->set_min_consumers(spec.sharing.min_consumers);
  }
  p.set_weight(spec.weight);
  p.set_access_group(spec.access_group);
  p.set_fast_resample(spec.fast_resample);
  p.set_repeated_augmentations(spec.repeated_augmentations);
  FieldsToProto(spec, &p);
  return p;
}

v1::RemoteAccess ToProto(const RemoteAccess& remote) {
  v1::RemoteAccess access;
  access.set_endpoint_url(remote.endpoint_url);
  access.set_region(remote.region);
  access.set_path_style(remote.path_style);
  access.set_access_key_id(remote.access_key_id);
  access.set_secret_access_key(remote.secret_access_key);
  access.set_session_token(remote.session_token);
  return access;
}

JobInfo FromProto(const v1::Job& job) {
  JobInfo info;
  info.id = job.id();
  info.spec = SpecFrom(job.spec());
  info.state = FromWire(job.state()).value_or(JobState::kRunning);
  info.error = job.error();
  info.num_samples = job.num_samples();
  info.class_names.assign(job.class_names().begin(), job.class_names().end());
  info.batches_per_epoch = job.batches_per_epoch();
  info.segment_name = job.segment().name();
  info.segment_bytes = job.segment().bytes();
  info.owner_uid = job.owner_uid();
  info.dataset_kind =
      FromWire(job.dataset_kind()).value_or(DatasetKind::kImageFolder);
  info.num_shards = job.num_shards();
  info.index_bytes = job.index_bytes();
  info.samples_skipped = job.samples_skipped();
  return info;
}

DaemonStats FromProto(const v1::Stats& stats) {
  DaemonStats out;
  const v1::DaemonStats& d = stats.daemon();
  out.version = d.version();
  out.workers = d.workers();
  out.uptime_ms = d.uptime_ms();
  out.shm_bytes = d.shm_bytes();
  out.shm_budget_bytes = d.shm_budget_bytes();
  out.shm_free_bytes = d.shm_free_bytes();
  out.samples_decoded = d.samples_decoded();
  out.decode_errors = d.decode_errors();
  out.worker_busy_percent = d.worker_busy_percent();
  out.decoded_per_second = d.decoded_per_second();
  out.orphans_reclaimed = d.orphans_reclaimed();
  for (const v1::JobStats& j : stats.jobs()) {
    JobStats js;
    js.job_id = j.job_id();
    js.name = j.name();
    js.owner = j.owner();
    js.state = FromWire(j.state()).value_or(JobState::kRunning);
    js.mode = FromWire(j.mode()).value_or(ConsumerMode::kExclusive);
    js.weight = j.weight();
    js.owner_uid = j.owner_uid();
    js.samples_decoded = j.samples_decoded();
    js.batches_delivered = j.batches_delivered();
    js.batches_released = j.batches_released();
    js.decode_errors = j.decode_errors();
    for (const v1::SampleError& e : j.errors()) {
      js.errors.push_back({e.path(), e.reason()});
    }
    js.slots = j.slots();
    js.filling_slots = j.filling_slots();
    js.ready_slots = j.ready_slots();
    js.leased_slots = j.leased_slots();
    js.ring_occupancy_percent = j.ring_occupancy_percent();
    js.decoded_per_second = j.decoded_per_second();
    js.delivered_per_second = j.delivered_per_second();
    js.worker_busy_us = j.worker_busy_us();
    js.consumers = j.consumers();
    for (const v1::ConsumerStats& c : j.consumer()) {
      js.consumer.push_back(
          {c.id(), c.name(), c.client(), c.batches_delivered(),
           c.batches_released(), c.batches_skipped(), c.leased(), c.lag(),
           c.input_bound_percent(), c.recent_input_bound_percent()});
    }
    out.jobs.push_back(std::move(js));
  }
  return out;
}

}  // namespace stoker::internal

namespace stoker {

std::vector<Op> TrainPipeline(uint32_t size) {
  return {RandomResizedCrop{.height = size, .width = size},
          RandomHorizontalFlip{}};
}

std::vector<Op> EvalPipeline(uint32_t resize, uint32_t crop) {
  return {Resize{.shorter_side = resize},
          CenterCrop{.height = crop, .width = crop}};
}

SampleField SampleFieldOf(std::string_view spec) {
  return {.name = std::string(spec),
          .source =
              absl::StrSplit(absl::string_view(spec.data(), spec.size()), ';')};
}

}  // namespace stoker
