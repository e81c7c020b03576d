// stokerctl's commands. Each prints its result on stdout (a table, or JSON
// with --json), explains a failure in a sentence on stderr, and returns the
// process exit code: 0 done, 1 the daemon refused or could not be reached,
// 2 wrong usage.
#ifndef STOKER_CLIENT_STOKERCTL_COMMANDS_H_
#define STOKER_CLIENT_STOKERCTL_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace stoker::ctl {

struct Options {
  std::string target;  // unix:///run/stoker/stoker.sock
  bool json = false;
  absl::Duration interval = absl::Seconds(1);  // top
  int iterations = 0;                          // top; 0: until interrupted
};

struct BenchOptions {
  // An ImageFolder directory, a manifest (.csv, .jsonl, .ndjson) or tar
  // shards (.tar, brace patterns allowed).
  std::vector<std::string> dataset;
  std::string label_field;  // shards: the json field holding the label
  uint32_t batch_size = 256;
  uint32_t size = 224;  // output height and width
  uint32_t slots = 8;
  std::string pipeline = "train";  // train, eval or resize
  bool fast_resample = false;
  absl::Duration duration = absl::Seconds(30);
  uint64_t max_batches = 0;  // 0: until `duration`
};

struct IndexOptions {
  std::vector<std::string> shards;  // brace patterns: local or remote
  std::string output;               // "" or "-": stdout
  int parallel = 4;                 // shards read at once
};

int Status(const Options& options);
int Jobs(const Options& options);
int Top(const Options& options);
int DeleteJob(const Options& options, const std::string& job_id);
int Bench(const Options& options, const BenchOptions& bench);
// Writes the shard index file of `index.shards` (needs no daemon).
int Index(const IndexOptions& index);

}  // namespace stoker::ctl

#endif  // STOKER_CLIENT_STOKERCTL_COMMANDS_H_
