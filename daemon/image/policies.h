// AutoAugment's learned policies, as torchvision lists them: 25 sub-policies
// of two steps each (op, probability, magnitude bin or -1 for none).
#ifndef STOKER_DAEMON_IMAGE_POLICIES_H_
#define STOKER_DAEMON_IMAGE_POLICIES_H_

#include <span>

#include "daemon/image/auto_augment.h"

namespace stoker {

struct PolicyStep {
  AugmentOp op;
  float p;  // compared with a float32 draw, as torch compares
  int magnitude_id;
};

// 50 steps: sub-policy i is steps 2i and 2i + 1.
std::span<const PolicyStep> PolicySteps(AutoAugmentSpec::Policy policy);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_POLICIES_H_
