// Wire messages <-> the public types of stoker/types.h and stoker/client.h:
// the SDK's one conversion of each (the daemon's side of the wire is in
// daemon/api/proto_convert.h).
#ifndef STOKER_CLIENT_SRC_CONVERT_H_
#define STOKER_CLIENT_SRC_CONVERT_H_

#include "stoker/client.h"
#include "stoker/types.h"
#include "stoker/v1/loader.pb.h"

namespace stoker::internal {

v1::JobSpec ToProto(const JobSpec& spec);
// Every field, as CreateJob sends it (tests/remote_access_test.cc holds
// this to the wire's fields).
v1::RemoteAccess ToProto(const RemoteAccess& remote);
JobInfo FromProto(const v1::Job& job);
DaemonStats FromProto(const v1::Stats& stats);

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_CONVERT_H_
