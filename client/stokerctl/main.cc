// stokerctl: look at and steer the stokerd of this node.
//
//   stokerctl status | jobs | top | job delete ID | bench DATASET |
//             index SHARDS
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "client/stokerctl/commands.h"
#include "common/cli.h"
#include "common/naming.h"

ABSL_FLAG(std::string, socket, std::string(stoker::kDaemonDefaultTarget),
          "stokerd's socket: a path, unix:PATH or unix://PATH");
ABSL_FLAG(bool, json, false, "print JSON instead of tables");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1),
          "top: time between frames");
ABSL_FLAG(int, iterations, 0, "top: frames to show; 0 until interrupted");
ABSL_FLAG(uint32_t, batch_size, 256, "bench: images per batch");
ABSL_FLAG(uint32_t, size, 224, "bench: output height and width");
ABSL_FLAG(uint32_t, slots, 8, "bench: ring slots");
ABSL_FLAG(std::string, pipeline, "train",
          "bench: train (random resized crop and flip), eval (resize and "
          "center crop) or resize");
ABSL_FLAG(bool, fast_resample, false,
          "bench: resample approximately (JobSpec::fast_resample)");
ABSL_FLAG(std::string, label_field, "",
          "bench: tar shards take each label from this field of the json "
          "member (default: the cls member)");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(30),
          "bench: how long to run");
ABSL_FLAG(std::string, output, "-",
          "index: the file to write ('-': standard output)");
ABSL_FLAG(int, parallel, 4, "index: shards read at once");
ABSL_FLAG(uint64_t, batches, 0,
          "bench: stop after this many batches; 0: "
          "run for --duration");

namespace {

constexpr char kUsage[] = R"(stokerctl [flags] COMMAND

Commands:
  status               version, uptime, health, workers busy, memory
  jobs                 one line per job: consumers, images/s, ring fill,
                       input-bound share, errors (then each failing file)
  top                  status and jobs, refreshed every --interval
  job delete JOB_ID    end a job; its consumers see CANCELLED, its ring is
                       freed
  bench DATASET...     run a job as fast as stokerd delivers and print
                       images/s; DATASET is an ImageFolder directory, a
                       manifest (.csv, .jsonl) or tar shards (.tar, brace
                       patterns allowed: 'train-{0000..0099}.tar')
  index SHARDS...      write the shard index of a streamed dataset (each
                       shard's sample count, size and version) to --output;
                       local paths or s3:// and http(s):// names (s3 with the
                       AWS_* variables); put it beside the shards as
                       stoker-index.tsv; needs no daemon

Common flags: --socket=/run/stoker/stoker.sock, --json; --help lists every
flag with its default)";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "stokerctl: %s\n\n%s\n", problem.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<char*> positional =
      stoker::ParseCommandLine(argc, argv, kUsage);
  const std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (args.empty()) return Usage("no command given");
  const absl::StatusOr<std::string> target =
      stoker::NormalizeSocketTarget(absl::GetFlag(FLAGS_socket));
  if (!target.ok()) {
    return Usage("--socket: " + std::string(target.status().message()));
  }
  const stoker::ctl::Options options{
      .target = *target,
      .json = absl::GetFlag(FLAGS_json),
      .interval = absl::GetFlag(FLAGS_interval),
      .iterations = absl::GetFlag(FLAGS_iterations),
  };
  const std::string& command = args[0];
  if (command == "status" && args.size() == 1) {
    return stoker::ctl::Status(options);
  }
  if (command == "jobs" && args.size() == 1) return stoker::ctl::Jobs(options);
  if (command == "top" && args.size() == 1) return stoker::ctl::Top(options);
  if (command == "job") {
    if (args.size() == 3 && args[1] == "delete") {
      return stoker::ctl::DeleteJob(options, args[2]);
    }
    return Usage("expected `job delete JOB_ID`");
  }
  if (command == "bench") {
    if (args.size() < 2) return Usage("expected `bench DATASET...`");
    return stoker::ctl::Bench(
        options, {.dataset = {args.begin() + 1, args.end()},
                  .label_field = absl::GetFlag(FLAGS_label_field),
                  .batch_size = absl::GetFlag(FLAGS_batch_size),
                  .size = absl::GetFlag(FLAGS_size),
                  .slots = absl::GetFlag(FLAGS_slots),
                  .pipeline = absl::GetFlag(FLAGS_pipeline),
                  .fast_resample = absl::GetFlag(FLAGS_fast_resample),
                  .duration = absl::GetFlag(FLAGS_duration),
                  .max_batches = absl::GetFlag(FLAGS_batches)});
  }
  if (command == "index") {
    if (args.size() < 2) return Usage("expected `index SHARDS...`");
    return stoker::ctl::Index({.shards = {args.begin() + 1, args.end()},
                               .output = absl::GetFlag(FLAGS_output),
                               .parallel = absl::GetFlag(FLAGS_parallel)});
  }
  return Usage("unknown command '" + command + "' (or wrong arguments)");
}
