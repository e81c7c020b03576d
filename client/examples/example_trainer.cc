// example_trainer: a stand-in for a training loop fed by stokerd.
//
// Creates a job on an ImageFolder, consumes it for --epochs epochs and prints
// per-epoch sample counts and images/s. With a CUDA device (and an SDK built
// with CUDA) each batch is copied to the GPU asynchronously on the trainer's
// own stream; otherwise the "training step" reads every pixel on the CPU.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "common/cli.h"
#include "stoker/client.h"
#include "stoker/cuda.h"

#ifdef STOKER_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

ABSL_FLAG(std::string, target, stoker::kDefaultTarget, "stokerd address");
ABSL_FLAG(std::string, data, "", "ImageFolder root");
ABSL_FLAG(uint32_t, epochs, 2, "epochs to train");
ABSL_FLAG(uint32_t, batch_size, 32, "batch size");
ABSL_FLAG(uint32_t, size, 224, "output height and width");
ABSL_FLAG(uint32_t, slots, 8, "ring slots");
ABSL_FLAG(uint64_t, seed, 1, "shuffle seed");
ABSL_FLAG(bool, gpu, true, "copy batches to the GPU when one is available");
ABSL_FLAG(std::string, pipeline, "train",
          "train (RandomResizedCrop + flip), eval (Resize 256/224 + "
          "CenterCrop, scaled to --size) or resize (plain resize)");

namespace {

using Clock = std::chrono::steady_clock;

struct EpochTally {
  uint64_t samples = 0;
  std::set<int64_t> distinct;
  Clock::time_point start = Clock::now();
};

// The CPU "training step": touch every byte like a real consumer would.
uint64_t CpuStep(const stoker::Batch& batch) {
  uint64_t sum = 0;
  for (uint8_t v : batch.images().span()) sum += v;
  return sum;
}

struct GpuSink {
  std::unique_ptr<stoker::CudaCopier> copier;
#ifdef STOKER_HAVE_CUDA
  void* images = nullptr;
  void* labels = nullptr;
  cudaStream_t stream = nullptr;
  ~GpuSink() {
    if (copier) copier->Drain().IgnoreError();
    if (stream) cudaStreamDestroy(stream);
    cudaFree(images);
    cudaFree(labels);
  }
#endif
};

std::unique_ptr<GpuSink> MaybeGpu(stoker::Consumer& consumer,
                                  const stoker::JobSpec& spec) {
  if (!absl::GetFlag(FLAGS_gpu)) return nullptr;
  auto copier = stoker::CudaCopier::Create(consumer);
  if (!copier.ok()) {
    std::printf("GPU path off: %s\n",
                std::string(copier.status().message()).c_str());
    return nullptr;
  }
  auto sink = std::make_unique<GpuSink>();
  sink->copier = *std::move(copier);
#ifdef STOKER_HAVE_CUDA
  cudaMalloc(&sink->images,
             size_t{spec.batch_size} * spec.height * spec.width * 3);
  cudaMalloc(&sink->labels, size_t{spec.batch_size} * sizeof(int64_t));
  cudaStreamCreateWithFlags(&sink->stream, cudaStreamNonBlocking);
#endif
  std::printf("GPU path on (ring %s)\n",
              sink->copier->pinned() ? "page-locked" : "pageable");
  return sink;
}

// Copies the batch to the GPU (released once copied) or reads it on the CPU.
absl::Status TrainStep(stoker::Batch batch, GpuSink* gpu, uint64_t* checksum) {
#ifdef STOKER_HAVE_CUDA
  if (gpu != nullptr) {
    return gpu->copier->CopyAsync(std::move(batch), gpu->images, gpu->labels,
                                  gpu->stream);
  }
#endif
  *checksum += CpuStep(batch);
  return batch.CheckIntact();
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "example_trainer: %s\n", status.ToString().c_str());
  return 1;
}

// The job the flags describe.
absl::StatusOr<stoker::JobSpec> SpecFromFlags() {
  const uint32_t size = absl::GetFlag(FLAGS_size);
  const std::string pipeline = absl::GetFlag(FLAGS_pipeline);
  stoker::JobSpec spec{.dataset_path = absl::GetFlag(FLAGS_data),
                       .batch_size = absl::GetFlag(FLAGS_batch_size),
                       .slots = absl::GetFlag(FLAGS_slots),
                       .height = size,
                       .width = size,
                       .seed = absl::GetFlag(FLAGS_seed),
                       .epochs = absl::GetFlag(FLAGS_epochs),
                       .name = "example_trainer"};
  if (pipeline == "train") {
    spec.pipeline = stoker::TrainPipeline(size);
  } else if (pipeline == "eval") {
    spec.pipeline = stoker::EvalPipeline(size * 8 / 7, size);
  } else if (pipeline != "resize") {
    return absl::InvalidArgumentError("--pipeline: train, eval or resize");
  }
  return spec;
}

// Consumes every batch of the job, printing each epoch's rate.
absl::Status Train(stoker::Consumer& consumer, uint64_t batches_per_epoch,
                   GpuSink* gpu, std::vector<EpochTally>* epochs,
                   uint64_t* checksum) {
  for (;;) {
    absl::StatusOr<stoker::Batch> batch = consumer.Next();
    if (absl::IsOutOfRange(batch.status())) break;
    if (!batch.ok()) return batch.status();
    const uint64_t epoch = batch->epoch();
    const uint64_t index = batch->index();
    EpochTally& tally = epochs->at(epoch);
    tally.samples += batch->size();
    for (int64_t sample : batch->indices()) tally.distinct.insert(sample);
    if (absl::Status step = TrainStep(*std::move(batch), gpu, checksum);
        !step.ok()) {
      return step;
    }
    if (index + 1 == batches_per_epoch) {
      const double seconds =
          std::chrono::duration<double>(Clock::now() - tally.start).count();
      std::printf(
          "epoch %lu: %lu samples (%zu distinct) in %.2f s, %.0f "
          "images/s\n",
          epoch, tally.samples, tally.distinct.size(), seconds,
          tally.samples / seconds);
      if (epoch + 1 < epochs->size()) (*epochs)[epoch + 1].start = Clock::now();
    }
  }
  if (gpu != nullptr) return gpu->copier->Drain();
  return absl::OkStatus();
}

// The totals: images/s, and how much of the time went to waiting for data
// (near 0, the loader keeps up; high, the input pipeline limits training).
void Report(stoker::Client& client, const stoker::Consumer& consumer,
            const std::vector<EpochTally>& epochs, double seconds, bool gpu,
            uint64_t checksum) {
  uint64_t total = 0;
  for (const EpochTally& t : epochs) total += t.samples;
  auto stats = client.GetStats();
  std::printf(
      "total: %lu samples in %.2f s: %.0f images/s (%s, checksum %lu, "
      "decode errors %lu)\n",
      total, seconds, total / seconds, gpu ? "GPU copy" : "CPU read", checksum,
      stats.ok() ? stats->decode_errors : 0);
  const stoker::InputStats input = consumer.input_stats();
  std::printf(
      "input-bound: %.0f%% (%.2f s waiting for batches, %.2f s in "
      "training steps); daemon workers %.0f%% busy\n",
      input.input_bound_percent, input.wait_seconds, input.step_seconds,
      stats.ok() ? stats->worker_busy_percent : 0);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // interleave sanely with logs
  stoker::ParseCommandLine(
      argc, argv,
      "example_trainer --data=IMAGEFOLDER [--target=unix:///run/stoker/"
      "stoker.sock] [--epochs=2] ...\n\n"
      "A stand-in for a training loop fed by stokerd: creates a job, consumes "
      "it and prints images/s.");
  auto client = stoker::Client::Connect(absl::GetFlag(FLAGS_target));
  if (!client.ok()) return Fail(client.status());
  auto spec = SpecFromFlags();
  if (!spec.ok()) return Fail(spec.status());
  auto job = (*client)->CreateJob(*spec);
  if (!job.ok()) return Fail(job.status());
  std::printf(
      "job %s: %lu samples in %zu classes, %lu batches per epoch, "
      "%s pipeline to %ux%u\n",
      job->id.c_str(), job->num_samples, job->class_names.size(),
      job->batches_per_epoch, absl::GetFlag(FLAGS_pipeline).c_str(),
      job->spec.height, job->spec.width);
  auto consumer = (*client)->Attach(job->id);
  if (!consumer.ok()) return Fail(consumer.status());
  auto gpu = MaybeGpu(**consumer, *spec);

  std::vector<EpochTally> epochs(spec->epochs);
  uint64_t checksum = 0;
  const Clock::time_point start = Clock::now();
  if (absl::Status trained = Train(**consumer, job->batches_per_epoch,
                                   gpu.get(), &epochs, &checksum);
      !trained.ok()) {
    return Fail(trained);
  }
  Report(**client, **consumer, epochs,
         std::chrono::duration<double>(Clock::now() - start).count(),
         gpu != nullptr, checksum);
  // After a daemon restart the consumer goes on with a new job: delete the
  // one it ends on, not the one created above.
  const std::string last_job = (*consumer)->job().id;
  consumer->reset();
  if (auto deleted = (*client)->DeleteJob(last_job); !deleted.ok()) {
    return Fail(deleted);
  }
  return 0;
}
