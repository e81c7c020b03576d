#include "daemon/jobs/job_tally.h"

#include <algorithm>
#include <set>

#include "daemon/jobs/delivery_policy.h"

namespace stoker {

JobTally::ErrorLog JobTally::RecordError(uint32_t sample,
                                         const std::string& path,
                                         const std::string& reason) {
  ++counts_.decode_errors;
  if (counts_.errors.size() >= kMaxErrorRecords ||
      !error_samples_.insert(sample).second) {
    return ErrorLog::kCountOnly;
  }
  counts_.errors.push_back({path, reason});
  return counts_.errors.size() == kMaxErrorRecords ? ErrorLog::kLogLast
                                                   : ErrorLog::kLog;
}

void JobTally::SampleRates(absl::Time now) {
  decoded_rate_.Record(now, static_cast<double>(counts_.samples_decoded));
  delivered_rate_.Record(now, static_cast<double>(images_delivered_));
}

void JobTally::Fill(JobCounters* out) const {
  out->samples_decoded = counts_.samples_decoded;
  out->batches_delivered = counts_.batches_delivered;
  out->batches_released = counts_.batches_released;
  out->decode_errors = counts_.decode_errors;
  out->errors = counts_.errors;
  out->decoded_per_second = decoded_rate_.PerSecond();
  out->delivered_per_second = delivered_rate_.PerSecond();
}

void FillConsumerCounters(const DeliveryPolicy& policy, JobCounters* out) {
  std::set<uint32_t> leased;
  for (const auto& [key, consumer] : policy.consumers()) {
    for (const auto& [slot, seq] : consumer.leased) leased.insert(slot);
    ConsumerCounters& c = out->consumers.emplace_back();
    c.id = consumer.id;
    c.name = consumer.who.name;
    c.client = consumer.who.client;
    c.delivered = consumer.delivered;
    c.released = consumer.released;
    c.skipped = consumer.skipped;
    c.leased = static_cast<uint32_t>(consumer.leased.size());
    c.lag = policy.Lag(consumer);
    c.reported = consumer.reported;
    c.report = consumer.report;
  }
  out->leased_slots = static_cast<uint32_t>(leased.size());
  std::sort(out->consumers.begin(), out->consumers.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
}

}  // namespace stoker
