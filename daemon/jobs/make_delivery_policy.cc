#include "daemon/jobs/make_delivery_policy.h"

#include "daemon/jobs/broadcast_policy.h"
#include "daemon/jobs/queue_policy.h"

namespace stoker {

std::unique_ptr<DeliveryPolicy> MakeDeliveryPolicy(
    const DeliveryPolicy::Params& params) {
  if (params.sharing.mode == ConsumerMode::kBroadcast) {
    return std::make_unique<BroadcastPolicy>(params);
  }
  return std::make_unique<QueuePolicy>(params);
}

}  // namespace stoker
