// consumer SOCKET_TARGET DATASET: creates a job, reads one batch, prints
// "batch 0: N images", and deletes the job.
#include <cstdio>

#include "stoker/client.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer unix:///path/to/socket DATASET\n");
    return 2;
  }
  auto client = stoker::Client::Connect(argv[1]);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  stoker::JobSpec spec;
  spec.dataset_path = argv[2];
  spec.batch_size = 4;
  spec.height = 32;
  spec.width = 32;
  auto job = (*client)->CreateJob(spec);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 1;
  }
  auto consumer = (*client)->Attach(job->id);
  if (!consumer.ok()) return 1;
  auto batch = (*consumer)->Next();
  if (!batch.ok()) {
    std::fprintf(stderr, "%s\n", batch.status().ToString().c_str());
    return 1;
  }
  std::printf("batch %llu: %u images\n",
              static_cast<unsigned long long>(batch->index()), batch->size());
  batch = absl::CancelledError("done");  // releases the slot
  consumer->reset();
  return (*client)->DeleteJob(job->id).ok() ? 0 : 1;
}
