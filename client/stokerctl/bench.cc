// stokerctl bench: one exclusive job on a dataset, consumed as fast as
// stokerd delivers, through the client SDK as a trainer would (no GPU).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/stokerctl/commands.h"
#include "client/stokerctl/format.h"
#include "stoker/client.h"

namespace stoker::ctl {
namespace {

// "stokerctl: cannot <doing>: <message>." (the message alone if it says
// "cannot" itself).
void Fail(const std::string& doing, const absl::Status& status) {
  std::string message(status.message());
  if (!message.starts_with("cannot ")) {
    message = absl::StrCat("cannot ", doing, ": ", message);
  }
  const char last = message.empty() ? '.' : message.back();
  absl::FPrintF(stderr, "stokerctl: %s%s\n", message,
                last == '.' || last == '?' ? "" : ".");
}

// Names the dataset in `spec` by what the arguments look like.
void SetDataset(const BenchOptions& bench, JobSpec* spec) {
  const std::string& first = bench.dataset.front();
  if (absl::EndsWith(first, ".tar")) {
    spec->shards = bench.dataset;
    spec->label_field = bench.label_field;
  } else if (absl::EndsWith(first, ".csv") || absl::EndsWith(first, ".jsonl") ||
             absl::EndsWith(first, ".ndjson")) {
    spec->manifest = first;
  } else {
    spec->dataset_path = first;
  }
}

// The job a bench runs; nullopt (after saying why) for an unknown pipeline.
std::optional<JobSpec> BenchSpec(const BenchOptions& bench) {
  JobSpec spec{.batch_size = bench.batch_size,
               .slots = bench.slots,
               .height = bench.size,
               .width = bench.size,
               .epochs = 0,
               .name = "stokerctl bench",
               .fast_resample = bench.fast_resample};
  SetDataset(bench, &spec);
  if (bench.pipeline == "train") {
    spec.pipeline = TrainPipeline(bench.size);
  } else if (bench.pipeline == "eval") {
    spec.pipeline = EvalPipeline(bench.size * 8 / 7, bench.size);
  } else if (bench.pipeline != "resize") {
    absl::FPrintF(stderr,
                  "stokerctl: --pipeline must be train, eval or resize, not "
                  "'%s'.\n",
                  bench.pipeline);
    return std::nullopt;
  }
  return spec;
}

struct BenchResult {
  uint64_t images = 0;
  uint64_t batches = 0;
  double seconds = 0;
  absl::Status failure;
};

// Reads batches for bench.duration (or bench.max_batches), drawing a
// progress bar on a terminal.
BenchResult ReadBatches(Consumer& consumer, const BenchOptions& bench,
                        bool terminal) {
  BenchResult result;
  const auto start = std::chrono::steady_clock::now();
  const auto seconds_since = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  const double limit = absl::ToDoubleSeconds(bench.duration);
  double last_draw = -1;
  while (seconds_since() < limit &&
         (bench.max_batches == 0 || result.batches < bench.max_batches)) {
    absl::StatusOr<Batch> batch = consumer.Next();
    if (!batch.ok()) {
      result.failure = batch.status();
      break;
    }
    result.images += batch->size();
    ++result.batches;
    const double now = seconds_since();
    if (terminal && now - last_draw >= 0.2) {
      last_draw = now;
      const double done = bench.max_batches > 0 ? double(result.batches) /
                                                      double(bench.max_batches)
                                                : now / limit;
      absl::FPrintF(stderr, "\r%s %5.1fs %8.0f images/s", ProgressBar(done, 30),
                    now, result.images / now);
    }
  }
  result.seconds = seconds_since();
  if (terminal) absl::FPrintF(stderr, "\r%s\r", std::string(60, ' '));
  return result;
}

void PrintResult(const BenchOptions& bench, const BenchResult& r, bool json) {
  const double rate = r.seconds > 0 ? r.images / r.seconds : 0;
  if (json) {
    absl::PrintF(
        "{\"dataset\":%s,\"images\":%d,\"batches\":%d,\"seconds\":%.3f,"
        "\"images_per_second\":%.1f,\"batch_size\":%d,\"size\":%d,"
        "\"pipeline\":\"%s\"}\n",
        JsonString(absl::StrJoin(bench.dataset, " ")), r.images, r.batches,
        r.seconds, rate, bench.batch_size, bench.size, bench.pipeline);
  } else {
    absl::PrintF(
        "%d images in %d batches of %d (%dx%d, %s) in %.1f s: %.0f "
        "images/s\n",
        r.images, r.batches, bench.batch_size, bench.size, bench.size,
        bench.pipeline, r.seconds, rate);
  }
}

}  // namespace

int Bench(const Options& options, const BenchOptions& bench) {
  const std::optional<JobSpec> spec = BenchSpec(bench);
  if (!spec) return 2;
  auto client = Client::Connect(options.target);
  if (!client.ok()) {
    Fail("reach stokerd at " + options.target, client.status());
    return 1;
  }
  auto job = (*client)->CreateJob(*spec);
  if (!job.ok()) {
    Fail("start a job on " + absl::StrJoin(bench.dataset, " "), job.status());
    return 1;
  }
  auto consumer = (*client)->Attach(job->id);
  if (!consumer.ok()) {
    Fail("attach to job " + job->id, consumer.status());
    (void)(*client)->DeleteJob(job->id);
    return 1;
  }
  const bool terminal = ::isatty(STDERR_FILENO) == 1 && !options.json;
  const BenchResult result = ReadBatches(**consumer, bench, terminal);
  consumer->reset();
  (void)(*client)->DeleteJob(job->id);
  if (!result.failure.ok()) {
    Fail(absl::StrFormat("read batch %d of job %s", result.batches, job->id),
         result.failure);
    return 1;
  }
  PrintResult(bench, result, options.json);
  return 0;
}

}  // namespace stoker::ctl
