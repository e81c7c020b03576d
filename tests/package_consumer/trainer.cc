// trainer SOCKET_TARGET DATASET EPOCHS STEP_MS RECONNECT_MS: a
// trainer built against the installed SDK only. Creates a shuffled job (seed
// 7), steps STEP_MS on each batch, confirms it (CheckIntact) and prints
//   batch <epoch> <index> <dataset indices...>
// before releasing it; rides through daemon restarts for up to RECONNECT_MS.
// Prints "end" after the last epoch, or "next <code> <message>" and exits 1
// when Next() fails. Used by tests/systemd_test.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "stoker/client.h"

namespace {

int Fail(const char* what, const absl::Status& status) {
  std::printf("%s %s %s\n", what,
              absl::StatusCodeToString(status.code()).c_str(),
              std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: trainer unix:///path/to/socket DATASET EPOCHS STEP_MS "
                 "RECONNECT_MS\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto client = stoker::Client::Connect(argv[1]);
  if (!client.ok()) return Fail("connect", client.status());
  stoker::JobSpec spec;
  spec.dataset_path = argv[2];
  spec.epochs = static_cast<uint32_t>(std::atoi(argv[3]));
  spec.batch_size = 4;
  spec.slots = 4;
  spec.height = 32;
  spec.width = 32;
  spec.seed = 7;
  const auto step = std::chrono::milliseconds(std::atoi(argv[4]));
  auto job = (*client)->CreateJob(spec);
  if (!job.ok()) return Fail("create", job.status());
  stoker::ConsumerOptions options;
  options.name = "trainer";
  options.reconnect_timeout = std::chrono::milliseconds(std::atoi(argv[5]));
  auto consumer = (*client)->Attach(job->id, options);
  if (!consumer.ok()) return Fail("attach", consumer.status());
  while (true) {
    auto batch = (*consumer)->Next();
    if (absl::IsOutOfRange(batch.status())) break;  // every epoch served
    if (!batch.ok()) return Fail("next", batch.status());
    std::this_thread::sleep_for(step);
    if (auto mine = batch->CheckIntact(); !mine.ok()) {
      std::printf("void %llu %llu\n",
                  static_cast<unsigned long long>(batch->epoch()),
                  static_cast<unsigned long long>(batch->index()));
      continue;
    }
    std::string line = "batch " + std::to_string(batch->epoch()) + " " +
                       std::to_string(batch->index());
    for (int64_t index : batch->indices()) line += " " + std::to_string(index);
    std::printf("%s\n", line.c_str());
  }
  std::printf("end\n");
  const std::string id = (*consumer)->job().id;
  consumer->reset();
  return (*client)->DeleteJob(id).ok() ? 0 : 1;
}
