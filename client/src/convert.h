// Wire messages <-> the public types of stoker/types.h.
#ifndef STOKER_CLIENT_SRC_CONVERT_H_
#define STOKER_CLIENT_SRC_CONVERT_H_

#include "stoker/types.h"
#include "stoker/v1/loader.pb.h"

namespace stoker::internal {

v1::JobSpec ToProto(const JobSpec& spec);
JobInfo FromProto(const v1::Job& job);
DaemonStats FromProto(const v1::Stats& stats);

}  // namespace stoker::internal

#endif  // STOKER_CLIENT_SRC_CONVERT_H_
