// The delivery policy for a job's sharing mode: broadcast, or a queue
// (exclusive and partition). Kept apart from the base class, which then
// knows none of its subclasses.
#ifndef STOKER_DAEMON_JOBS_MAKE_DELIVERY_POLICY_H_
#define STOKER_DAEMON_JOBS_MAKE_DELIVERY_POLICY_H_

#include <memory>

#include "daemon/jobs/delivery_policy.h"

namespace stoker {

std::unique_ptr<DeliveryPolicy> MakeDeliveryPolicy(
    const DeliveryPolicy::Params& params);

}  // namespace stoker

#endif  // STOKER_DAEMON_JOBS_MAKE_DELIVERY_POLICY_H_
