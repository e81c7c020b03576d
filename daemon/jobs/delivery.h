// What a job and its consumers say to each other: who attaches, what they
// report, and the batches handed to them.
#ifndef STOKER_DAEMON_JOBS_DELIVERY_H_
#define STOKER_DAEMON_JOBS_DELIVERY_H_

#include <cstdint>
#include <string>

namespace stoker {

// A consumer's stream, as the job sees it.
class JobListener {
 public:
  virtual ~JobListener() = default;
  // Something may be deliverable (a batch, the end of the job, an error).
  // Called without the job's lock held, from any thread.
  virtual void OnDeliverable() = 0;
};

// Who attaches (for stats and logs).
struct ConsumerIdentity {
  std::string name;
  std::string client;
};

// What a consumer measured (Report in loader.proto), cumulative.
struct ConsumerReport {
  uint64_t batches = 0;
  uint64_t wait_us = 0;
  uint64_t step_us = 0;
  uint64_t recent_wait_us = 0;
  uint64_t recent_step_us = 0;
};

// A batch handed to a consumer.
struct Delivered {
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint64_t epoch = 0;
  uint64_t batch = 0;
  uint32_t sample_count = 0;
};

enum class Delivery {
  kBatch,     // *out holds a batch, now leased
  kNothing,   // nothing to send now (no credit or no ready batch)
  kEndOfJob,  // every batch has been sent
  kEnded,     // the job (or this consumer) ended; *ended says why
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_DELIVERY_H_
