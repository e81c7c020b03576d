#include "daemon/jobs/job_tally.h"

namespace stoker {

JobTally::ErrorLog JobTally::RecordError(uint32_t sample,
                                         const std::string& path,
                                         const std::string& reason) {
  ++decode_errors_;
  if (errors_.size() >= kMaxErrorRecords ||
      !error_samples_.insert(sample).second) {
    return ErrorLog::kCountOnly;
  }
  errors_.push_back({path, reason});
  return errors_.size() == kMaxErrorRecords ? ErrorLog::kLogLast
                                            : ErrorLog::kLog;
}

void JobTally::SampleRates(absl::Time now) {
  decoded_rate_.Record(now, static_cast<double>(samples_decoded_));
  delivered_rate_.Record(now, static_cast<double>(images_delivered_));
}

void JobTally::Fill(JobCounters* out) const {
  out->samples_decoded = samples_decoded_;
  out->batches_delivered = batches_delivered_;
  out->batches_released = batches_released_;
  out->decode_errors = decode_errors_;
  out->errors = errors_;
  out->decoded_per_second = decoded_rate_.PerSecond();
  out->delivered_per_second = delivered_rate_.PerSecond();
}

}  // namespace stoker
