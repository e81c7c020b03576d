#include "client/src/convert.h"

namespace stoker::internal {
namespace {

JobState StateFrom(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_FINISHED:
      return JobState::kFinished;
    case v1::JOB_STATE_FAILED:
      return JobState::kFailed;
    default:
      return JobState::kRunning;
  }
}

JobSpec SpecFrom(const v1::JobSpec& p) {
  JobSpec spec;
  spec.dataset_path = p.dataset().path();
  spec.batch_size = p.batch_size();
  spec.slots = p.slots();
  spec.height = p.output().height();
  spec.width = p.output().width();
  spec.seed = p.seed();
  spec.shuffle = !p.has_shuffle() || p.shuffle();
  spec.drop_last = p.drop_last();
  spec.epochs = p.epochs();
  spec.on_error =
      p.on_error() == v1::ON_ERROR_FAIL ? OnError::kFail : OnError::kReplace;
  spec.name = p.name();
  return spec;
}

}  // namespace

v1::JobSpec ToProto(const JobSpec& spec) {
  v1::JobSpec p;
  p.mutable_dataset()->set_path(spec.dataset_path);
  p.set_batch_size(spec.batch_size);
  p.set_slots(spec.slots);
  p.mutable_output()->set_height(spec.height);
  p.mutable_output()->set_width(spec.width);
  p.mutable_output()->set_dtype(v1::DTYPE_UINT8);
  p.set_seed(spec.seed);
  p.set_shuffle(spec.shuffle);
  p.set_drop_last(spec.drop_last);
  p.set_epochs(spec.epochs);
  p.set_on_error(spec.on_error == OnError::kFail ? v1::ON_ERROR_FAIL
                                                 : v1::ON_ERROR_REPLACE);
  p.set_name(spec.name);
  return p;
}

JobInfo FromProto(const v1::Job& job) {
  JobInfo info;
  info.id = job.id();
  info.spec = SpecFrom(job.spec());
  info.state = StateFrom(job.state());
  info.error = job.error();
  info.num_samples = job.num_samples();
  info.class_names.assign(job.class_names().begin(), job.class_names().end());
  info.batches_per_epoch = job.batches_per_epoch();
  info.segment_name = job.segment().name();
  info.segment_bytes = job.segment().bytes();
  return info;
}

DaemonStats FromProto(const v1::Stats& stats) {
  DaemonStats out;
  out.version = stats.daemon().version();
  out.workers = stats.daemon().workers();
  out.uptime_ms = stats.daemon().uptime_ms();
  out.shm_bytes = stats.daemon().shm_bytes();
  out.samples_decoded = stats.daemon().samples_decoded();
  out.decode_errors = stats.daemon().decode_errors();
  for (const v1::JobStats& j : stats.jobs()) {
    JobStats js;
    js.job_id = j.job_id();
    js.state = StateFrom(j.state());
    js.samples_decoded = j.samples_decoded();
    js.batches_delivered = j.batches_delivered();
    js.batches_released = j.batches_released();
    js.decode_errors = j.decode_errors();
    for (const v1::SampleError& e : j.errors()) {
      js.errors.push_back({e.path(), e.reason()});
    }
    js.ready_slots = j.ready_slots();
    js.leased_slots = j.leased_slots();
    js.consumers = j.consumers();
    out.jobs.push_back(std::move(js));
  }
  return out;
}

}  // namespace stoker::internal
