// JobTally: a job's counters and rates (GetStats, stokerctl, /metrics), and the
// decode failures it remembers.
//
// Thread-safety: none; Job guards its JobTally with its mutex.
#ifndef STOKER_DAEMON_JOBS_JOB_TALLY_H_
#define STOKER_DAEMON_JOBS_JOB_TALLY_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "daemon/jobs/delivery.h"
#include "daemon/jobs/rate_meter.h"
#include "stoker/vocabulary.h"

namespace stoker {

struct SampleErrorRecord {
  std::string path;
  std::string reason;
};

struct ConsumerCounters {
  uint64_t id = 0;
  std::string name;
  std::string client;
  uint64_t delivered = 0;
  uint64_t released = 0;
  uint64_t skipped = 0;
  uint32_t leased = 0;
  uint64_t lag = 0;
  bool reported = false;
  ConsumerReport report;
};

struct JobCounters {
  JobState state = JobState::kRunning;
  uint64_t samples_decoded = 0;
  uint64_t batches_delivered = 0;
  uint64_t batches_released = 0;
  uint64_t decode_errors = 0;
  std::vector<SampleErrorRecord> errors;
  uint32_t filling_slots = 0;
  uint32_t ready_slots = 0;
  uint32_t leased_slots = 0;
  double decoded_per_second = 0;
  double delivered_per_second = 0;
  uint64_t worker_busy_ns = 0;
  std::vector<ConsumerCounters> consumers;
};

class DeliveryPolicy;

// The consumers' counters, in attach order, and the slots they hold.
void FillConsumerCounters(const DeliveryPolicy& policy, JobCounters* out);

class JobTally {
 public:
  // The most distinct failures a job remembers (and logs).
  static constexpr size_t kMaxErrorRecords = 64;

  enum class ErrorLog { kCountOnly, kLog, kLogLast };
  // Counts a failure of `sample`; the first kMaxErrorRecords distinct ones
  // are remembered and should be logged (the last of them saying so).
  ErrorLog RecordError(uint32_t sample, const std::string& path,
                       const std::string& reason);
  void Decoded() { ++counts_.samples_decoded; }
  void Delivered(uint32_t images) {
    ++counts_.batches_delivered;
    images_delivered_ += images;
  }
  void Released() { ++counts_.batches_released; }
  // Records the rates; called about twice a second.
  void SampleRates(absl::Time now);

  // Fills the job-wide fields of `out`.
  void Fill(JobCounters* out) const;

 private:
  // The job-wide counts and the failures remembered, as Fill gives them.
  JobCounters counts_;
  uint64_t images_delivered_ = 0;
  std::set<uint32_t> error_samples_;
  RateMeter decoded_rate_;
  RateMeter delivered_rate_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_JOB_TALLY_H_
