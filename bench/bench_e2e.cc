// bench_e2e: in one run on the same files, images/s of
//   (a) a bare single-threaded decode+resize loop (the daemon's own decode
//       code, called directly: the per-core ceiling), and
//   (b) stokerd (a separate process, N workers) + a client consuming in this
//       process, end to end through the shared-memory ring,
// and the ratio of (b) to N x (a), i.e. how much of N cores' worth of decode
// reaches the trainer.
//
// --mode=bare_full and --mode=client are the pieces bench/compare_torch.py
// runs side by side with a torch DataLoader: a bare libjpeg-turbo
// full-decode loop on one thread, and a client of an already running
// stokerd (--target). Both print "key value" result lines.
#include <signal.h>
#include <sys/resource.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "bench/support/dataset_gen.h"
#include "bench/support/process.h"
#include "common/cli.h"
#include "daemon/datasets/image_folder.h"
#include "daemon/datasets/sample_file.h"
#include "daemon/image/sample_decoder.h"
#include "stoker/client.h"

ABSL_FLAG(std::string, data, "", "ImageFolder root; empty: generate one");
ABSL_FLAG(int, classes, 8, "classes of the generated dataset");
ABSL_FLAG(int, per_class, 128, "images per class of the generated dataset");
ABSL_FLAG(int, workers, 0, "stokerd worker threads; 0: one per core");
ABSL_FLAG(uint32_t, size, 224, "output height and width");
ABSL_FLAG(uint32_t, batch_size, 64, "batch size");
ABSL_FLAG(uint32_t, slots, 8, "ring slots");
ABSL_FLAG(uint32_t, epochs, 3, "epochs to consume (the first is warm-up)");
ABSL_FLAG(bool, touch, false, "client reads every pixel of every batch");
ABSL_FLAG(bool, copy_on_write, false,
          "client reads batches through a private copy-on-write view (as "
          "the Python package does)");
ABSL_FLAG(std::string, stokerd, STOKERD_PATH, "stokerd binary");
ABSL_FLAG(std::string, mode, "report",
          "report, bare_full, bare_train (one thread: the daemon's decode "
          "of RandomResizedCrop + flip, nothing else) or client");
ABSL_FLAG(std::string, target, "", "--mode=client: the daemon to use");
ABSL_FLAG(std::string, pipeline, "resize", "resize, train or eval");
ABSL_FLAG(std::string, dtype, "uint8", "uint8, float32 or float16");
ABSL_FLAG(bool, fast_resample, false,
          "resample approximately instead of as Pillow (JobSpec)");
ABSL_FLAG(double, step_ms, 0,
          "--mode=client: simulated training step per batch, in ms");

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double SelfCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// One thread, every file of the dataset read and given to `work` (with
// its pass and index) once per pass; images/s of the best of two passes
// (the first also warms the page cache).
template <typename Work>
double BestOfTwoPasses(const stoker::DatasetIndex& dataset, Work work) {
  std::vector<uint8_t> file;
  double best = 0;
  for (uint64_t pass = 0; pass < 2; ++pass) {
    const auto start = Clock::now();
    for (uint32_t i = 0; i < dataset.size(); ++i) {
      const std::string path = dataset.Path(i);
      if (!stoker::ReadFile(path, &file).ok() || !work(file, pass, i)) {
        std::fprintf(stderr, "bare loop: cannot decode %s\n", path.c_str());
      }
    }
    best = std::max(best, dataset.size() / Seconds(start));
  }
  return best;
}

// (a): the daemon's own decode and resize to size x size.
double BareLoop(const stoker::DatasetIndex& dataset, int size) {
  stoker::SampleDecoder decoder({});
  std::vector<uint8_t> out(size_t(size) * size * 3);
  return BestOfTwoPasses(
      dataset, [&](const std::vector<uint8_t>& file, uint64_t, uint32_t) {
        return decoder.DecodeTo(file, {size, size}, out.data()).ok();
      });
}

// The job the flags describe.
stoker::JobSpec Spec(const std::string& root) {
  const uint32_t size = absl::GetFlag(FLAGS_size);
  stoker::JobSpec spec{.dataset_path = root,
                       .batch_size = absl::GetFlag(FLAGS_batch_size),
                       .slots = absl::GetFlag(FLAGS_slots),
                       .height = size,
                       .width = size,
                       .epochs = absl::GetFlag(FLAGS_epochs),
                       .fast_resample = absl::GetFlag(FLAGS_fast_resample)};
  const std::string pipeline = absl::GetFlag(FLAGS_pipeline);
  if (pipeline == "train") spec.pipeline = stoker::TrainPipeline(size);
  if (pipeline == "eval")
    spec.pipeline = stoker::EvalPipeline(size * 8 / 7, size);
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (dtype != "uint8") {
    spec.dtype =
        dtype == "float16" ? stoker::DType::kFloat16 : stoker::DType::kFloat32;
    if (pipeline != "resize") spec.pipeline.push_back(stoker::Normalize{});
  }
  return spec;
}

// (c) of the torch comparison: libjpeg-turbo's full decode, nothing else.
double BareFullDecode(const stoker::DatasetIndex& dataset) {
  tjhandle handle = tjInitDecompress();
  std::vector<uint8_t> pixels;
  const double best = BestOfTwoPasses(
      dataset, [&](const std::vector<uint8_t>& file, uint64_t, uint32_t) {
        int w = 0, h = 0, sub = 0, space = 0;
        if (tjDecompressHeader3(handle, file.data(), file.size(), &w, &h, &sub,
                                &space) != 0) {
          return false;
        }
        pixels.resize(size_t(w) * h * 3);
        return tjDecompress2(handle, file.data(), file.size(), pixels.data(), w,
                             0, h, TJPF_RGB, 0) == 0;
      });
  tjDestroy(handle);
  return best;
}

// What a stokerd worker does to a sample of the train pipeline
// (RandomResizedCrop(size) + flip, uint8), with nothing else; each sample
// drawn anew per pass.
double BareTrain(const stoker::DatasetIndex& dataset, int size) {
  stoker::SampleDecoder decoder({});
  stoker::Pipeline p;
  p.geometry = stoker::Pipeline::Geometry::kRandomResizedCrop;
  p.output = {size, size};
  p.flip_p = 0.5;
  std::vector<uint8_t> out(p.BytesPerImage());
  return BestOfTwoPasses(dataset, [&](const std::vector<uint8_t>& file,
                                      uint64_t pass, uint32_t i) {
    return decoder.ProcessBytes(file, p, pass << 32 | i, out.data()).ok();
  });
}

// Reads every byte of a batch's images (any dtype).
uint64_t Touch(const stoker::Batch& batch) {
  const stoker::Batch::ImageTensor images = batch.image_tensor();
  const auto* bytes = static_cast<const uint8_t*>(images.data);
  uint64_t sum = 0;
  size_t i = 0;
  for (; i + 8 <= images.bytes; i += 8) {  // 8 bytes a load: memory bound
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    sum += word;
  }
  for (; i < images.bytes; ++i) sum += bytes[i];
  return sum;
}

// Consumes a job of an already running daemon; epochs after the first are
// measured.
int RunClient(const std::string& root) {
  auto client = stoker::Client::Connect(absl::GetFlag(FLAGS_target));
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  auto job = (*client)->CreateJob(Spec(root));
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 1;
  }
  stoker::ConsumerOptions options;
  options.copy_on_write = absl::GetFlag(FLAGS_copy_on_write);
  auto consumer = (*client)->Attach(job->id, options);
  if (!consumer.ok()) return 1;
  uint64_t measured = 0, touched = 0;
  Clock::time_point start = Clock::now();
  double cpu = 0;
  // How long Next() took for the first batch of each measured epoch, and
  // for the others: the epoch-boundary stall, if any.
  std::vector<double> first_waits, other_waits;
  const auto step = std::chrono::microseconds(
      static_cast<int64_t>(absl::GetFlag(FLAGS_step_ms) * 1e3));
  for (;;) {
    const Clock::time_point asked = Clock::now();
    auto batch = (*consumer)->Next();
    if (!batch.ok()) break;
    const double wait = Seconds(asked);
    if (batch->epoch() == 1 && batch->index() == 0) {
      start = Clock::now();
      cpu = SelfCpuSeconds();
    }
    if (batch->epoch() >= 1) {
      measured += batch->size();
      (batch->index() == 0 ? first_waits : other_waits).push_back(wait);
    }
    if (absl::GetFlag(FLAGS_touch)) touched += Touch(*batch);
    batch->Release();
    std::this_thread::sleep_for(step);
  }
  const double seconds = Seconds(start);
  if (touched == 1) std::printf(" ");  // keep the touch loop
  std::printf("images_per_s %.1f\nclient_cpu_ms_per_image %.4f\n",
              measured / seconds,
              1e3 * (SelfCpuSeconds() - cpu) / std::max<uint64_t>(measured, 1));
  if (!first_waits.empty() && !other_waits.empty()) {
    std::sort(other_waits.begin(), other_waits.end());
    std::printf(
        "epoch_start_wait_ms %.1f\nmedian_wait_ms %.1f\n",
        1e3 * std::accumulate(first_waits.begin(), first_waits.end(), 0.0) /
            first_waits.size(),
        1e3 * other_waits[other_waits.size() / 2]);
  }
  consumer->reset();
  (void)(*client)->DeleteJob(job->id);
  return 0;
}

struct EndToEnd {
  double images_per_second = 0;  // after the warm-up epoch
  double daemon_cpu_per_image = 0;
  double client_cpu_per_image = 0;
};

absl::StatusOr<EndToEnd> RunDaemon(const std::string& root, int workers,
                                   const std::string& dir) {
  const std::string socket = dir + "/bench.sock";
  stoker::testdata::Subprocess daemon(
      absl::GetFlag(FLAGS_stokerd),
      {"--config=", "--socket=unix://" + socket,
       "--workers=" + std::to_string(workers), "--log_level=warn"},
      dir + "/stokerd.log");
  if (!stoker::testdata::WaitForPath(socket, std::chrono::seconds(10))) {
    return absl::UnavailableError(
        stoker::testdata::ReadTextFile(dir + "/stokerd.log"));
  }
  auto client = stoker::Client::Connect("unix://" + socket);
  if (!client.ok()) return client.status();
  auto job = (*client)->CreateJob(Spec(root));
  if (!job.ok()) return job.status();
  auto consumer = (*client)->Attach(job->id);
  if (!consumer.ok()) return consumer.status();
  uint64_t measured = 0, sink = 0;
  Clock::time_point start;
  double daemon_cpu = 0, client_cpu = 0;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) break;
    if (batch->epoch() == 1 && batch->index() == 0) {
      start = Clock::now();
      daemon_cpu = daemon.CpuSeconds();
      client_cpu = SelfCpuSeconds();
    }
    if (batch->epoch() >= 1) measured += batch->size();
    if (absl::GetFlag(FLAGS_touch)) sink += Touch(*batch);
  }
  EndToEnd result;
  result.images_per_second = measured / Seconds(start);
  result.daemon_cpu_per_image = (daemon.CpuSeconds() - daemon_cpu) / measured;
  result.client_cpu_per_image = (SelfCpuSeconds() - client_cpu) / measured;
  consumer->reset();
  (void)(*client)->DeleteJob(job->id);
  daemon.Signal(SIGTERM);
  daemon.Wait(std::chrono::seconds(20));
  if (sink == 1) std::printf(" ");  // keep the touch loop
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  stoker::ParseCommandLine(
      argc, argv,
      "bench_e2e [--data=ROOT] [--workers=N] [--pipeline=resize|train|eval] "
      "...\n\nimages/s of a bare decode loop and of stokerd plus a client, "
      "end to end.");
  stoker::testdata::TempDir dir("stoker-bench");
  std::string root = absl::GetFlag(FLAGS_data);
  if (root.empty()) {
    root = dir.path() + "/data";
    auto generated = stoker::testdata::GenerateImageFolder(
        root, {.classes = absl::GetFlag(FLAGS_classes),
               .images_per_class = absl::GetFlag(FLAGS_per_class)});
    if (!generated.ok()) {
      std::fprintf(stderr, "%s\n", generated.status().ToString().c_str());
      return 1;
    }
    std::printf("dataset: generated %zu JPEGs, mean %.0f KB\n",
                generated->paths.size(),
                generated->total_bytes / 1e3 / generated->paths.size());
  }
  auto dataset = stoker::ScanImageFolder(root);
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 1;
  }
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "bare_full") {
    std::printf("images_per_s %.1f\n", BareFullDecode(**dataset));
    return 0;
  }
  if (mode == "bare_train") {
    std::printf(
        "images_per_s %.1f\n",
        BareTrain(**dataset, static_cast<int>(absl::GetFlag(FLAGS_size))));
    return 0;
  }
  if (mode == "client") return RunClient(root);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int workers =
      absl::GetFlag(FLAGS_workers) > 0 ? absl::GetFlag(FLAGS_workers) : cores;
  const int size = static_cast<int>(absl::GetFlag(FLAGS_size));

  const double bare = BareLoop(**dataset, size);
  const double full = BareFullDecode(**dataset);
  auto e2e = RunDaemon(root, workers, dir.path());
  if (!e2e.ok()) {
    std::fprintf(stderr, "end to end: %s\n", e2e.status().ToString().c_str());
    return 1;
  }
  const int used_cores = std::min(workers, cores);
  std::printf(
      "machine: %d cores; stokerd workers: %d; %zu images -> %dx%d, "
      "batch %u\n",
      cores, workers, static_cast<size_t>((*dataset)->size()), size, size,
      absl::GetFlag(FLAGS_batch_size));
  std::printf("bare decode+resize loop, 1 thread : %8.0f images/s\n", bare);
  std::printf("stokerd + client, end to end      : %8.0f images/s\n",
              e2e->images_per_second);
  std::printf("end to end / (%d cores x bare)     : %8.2f\n", used_cores,
              e2e->images_per_second / (used_cores * bare));
  std::printf("daemon CPU per image              : %8.3f ms (bare: %.3f ms)\n",
              e2e->daemon_cpu_per_image * 1e3, 1e3 / bare);
  std::printf("client CPU per image              : %8.3f ms\n",
              e2e->client_cpu_per_image * 1e3);
  // The cost per image against libjpeg-turbo's full decode of the same
  // files, per core: by throughput (the cores the workers use) and by the
  // daemon's CPU time.
  std::printf("bare full decode, 1 thread        : %8.0f images/s\n", full);
  std::printf("end to end / (%d cores x full)     : %8.2f\n", used_cores,
              e2e->images_per_second / (used_cores * full));
  std::printf("full decode / daemon CPU per image: %8.2f\n",
              1.0 / full / e2e->daemon_cpu_per_image);
  return 0;
}
