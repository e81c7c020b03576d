// Daemon state to wire messages.
#ifndef STOKER_DAEMON_API_PROTO_CONVERT_H_
#define STOKER_DAEMON_API_PROTO_CONVERT_H_

#include "daemon/jobs/job.h"
#include "daemon/remote/remote_access.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// Bounds on what one response may hold, whatever names users give: the
// class names in a Job, in a GetClassNames page, and each name or path
// quoted in stats.
inline constexpr size_t kJobClassNameBytes = size_t{256} << 10;
inline constexpr size_t kClassNamesPageBytes = size_t{1} << 20;
inline constexpr size_t kStatsTextBytes = 512;

// The job as the API shows it: its class names as far as
// kJobClassNameBytes holds them (num_classes counts all).
void JobToProto(const Job& job, v1::Job* out);
// A CreateJob's remote access (the trainer's credentials), for its store:
// the daemon's one conversion of the wire's RemoteAccess (the SDK's is
// internal::ToProto in client/src/convert.cc; tests/remote_access_test.cc
// holds both to every field of the proto).
FetchAccess FetchAccessOf(const v1::RemoteAccess& remote);
// The job's class names from `offset`, as far as kClassNamesPageBytes
// holds them (at least one, if any is left).
void ClassNamesToProto(const Job& job, uint64_t offset, v1::ClassNames* out);
void CountersToProto(const Job& job, const JobCounters& counters,
                     v1::JobStats* out);
void DeliveredToHandle(const Job& job, const Delivered& batch,
                       v1::BatchHandle* out);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_PROTO_CONVERT_H_
