// Decode once, train many: daemon CPU time per delivered batch with k = 1, 2
// and 4 broadcast consumers of one job (each consumer in its own thread,
// flat out), and the same k trainers as k independent jobs for contrast.
// With broadcast the daemon decodes each batch once however many consumers
// receive it, so its CPU time per delivered batch should fall close to 1/k.
//
//   bench_broadcast [--data=DIR] [--workers=N] [--epochs=2]
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "bench/support/dataset_gen.h"
#include "bench/support/process.h"
#include "common/cli.h"
#include "stoker/client.h"

ABSL_FLAG(std::string, data, "", "ImageFolder root; empty: generate one");
ABSL_FLAG(int, images, 512, "images in the generated dataset");
ABSL_FLAG(int, workers, 0, "stokerd worker threads; 0: one per core");
ABSL_FLAG(uint32_t, epochs, 2, "epochs each consumer receives");
ABSL_FLAG(uint32_t, batch_size, 32, "batch size");
ABSL_FLAG(std::string, stokerd, STOKERD_PATH, "stokerd binary");

namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  uint64_t delivered = 0;  // batches, all consumers together
  double daemon_cpu_s = 0;
  double seconds = 0;
};

// k consumers: of one broadcast job (shared) or of k separate jobs.
absl::StatusOr<Run> Measure(stoker::Client& client, const std::string& root,
                            int k, bool shared,
                            const stoker::testdata::Subprocess& daemon) {
  stoker::JobSpec spec{.dataset_path = root,
                       .batch_size = absl::GetFlag(FLAGS_batch_size),
                       .slots = 8,
                       .pipeline = stoker::TrainPipeline(224),
                       .epochs = absl::GetFlag(FLAGS_epochs)};
  if (shared) {
    spec.sharing = {.mode = stoker::ConsumerMode::kBroadcast,
                    .min_consumers = static_cast<uint32_t>(k)};
  }
  const double cpu_before = daemon.CpuSeconds();
  const Clock::time_point start = Clock::now();
  std::vector<std::string> jobs;
  std::vector<std::unique_ptr<stoker::Consumer>> consumers;
  for (int i = 0; i < k; ++i) {
    if (i == 0 || !shared) {
      auto job = client.CreateJob(spec);
      if (!job.ok()) return job.status();
      jobs.push_back(job->id);
    }
    auto consumer = client.Attach(jobs.back());
    if (!consumer.ok()) return consumer.status();
    consumers.push_back(*std::move(consumer));
  }
  std::vector<uint64_t> counts(k, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < k; ++i) {
    threads.emplace_back([&, i] {
      while (consumers[i]->Next().ok()) ++counts[i];
    });
  }
  for (auto& t : threads) t.join();
  Run run;
  run.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  run.daemon_cpu_s = daemon.CpuSeconds() - cpu_before;
  for (uint64_t c : counts) run.delivered += c;
  consumers.clear();
  for (const std::string& id : jobs) (void)client.DeleteJob(id);
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  stoker::ParseCommandLine(
      argc, argv,
      "bench_broadcast [--data=ROOT] [--workers=N] ...\n\n"
      "Daemon CPU per delivered batch: k broadcast consumers of one job "
      "against k independent jobs.");
  stoker::testdata::TempDir dir("stoker-bcast");
  std::string root = absl::GetFlag(FLAGS_data);
  if (root.empty()) {
    root = dir.path() + "/data";
    const int images = absl::GetFlag(FLAGS_images);
    auto generated = stoker::testdata::GenerateImageFolder(
        root, {.classes = 8, .images_per_class = std::max(1, images / 8)});
    if (!generated.ok()) {
      std::fprintf(stderr, "%s\n", generated.status().ToString().c_str());
      return 1;
    }
  }
  const std::string socket = dir.path() + "/bench.sock";
  const int workers =
      absl::GetFlag(FLAGS_workers) > 0
          ? absl::GetFlag(FLAGS_workers)
          : static_cast<int>(std::thread::hardware_concurrency());
  stoker::testdata::Subprocess daemon(
      absl::GetFlag(FLAGS_stokerd),
      {"--config=", "--socket=unix://" + socket,
       "--workers=" + std::to_string(workers), "--log_level=warn"},
      dir.path() + "/stokerd.log");
  if (!stoker::testdata::WaitForPath(socket, std::chrono::seconds(10))) {
    std::fprintf(stderr, "stokerd did not start\n");
    return 1;
  }
  auto client = stoker::Client::Connect("unix://" + socket);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "RandomResizedCrop(224) + flip, batch %u, %u epochs per "
      "consumer, %d workers\n\n",
      absl::GetFlag(FLAGS_batch_size), absl::GetFlag(FLAGS_epochs), workers);
  std::printf("%-22s%4s%12s%16s%12s%14s\n", "", "k", "batches",
              "daemon ms/batch", "vs k=1", "batches/s");
  for (const bool shared : {true, false}) {
    double base = 0;
    for (const int k : {1, 2, 4}) {
      auto run = Measure(**client, root, k, shared, daemon);
      if (!run.ok()) {
        std::fprintf(stderr, "%s\n", run.status().ToString().c_str());
        return 1;
      }
      const double per_batch = 1e3 * run->daemon_cpu_s / run->delivered;
      if (k == 1) base = per_batch;
      std::printf("%-22s%4d%12llu%16.2f%12.2f%14.1f\n",
                  shared ? "broadcast, one job" : "independent jobs", k,
                  static_cast<unsigned long long>(run->delivered), per_batch,
                  per_batch / base, run->delivered / run->seconds);
    }
  }
  daemon.Signal(SIGTERM);
  daemon.Wait(std::chrono::seconds(20));
  return 0;
}
