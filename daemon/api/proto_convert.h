// Daemon state to wire messages.
#ifndef STOKER_DAEMON_API_PROTO_CONVERT_H_
#define STOKER_DAEMON_API_PROTO_CONVERT_H_

#include "daemon/jobs/job.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

void JobToProto(const Job& job, v1::Job* out);
void CountersToProto(const Job& job, const JobCounters& counters,
                     v1::JobStats* out);
void DeliveredToHandle(const Job& job, const Delivered& batch,
                       v1::BatchHandle* out);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_PROTO_CONVERT_H_
