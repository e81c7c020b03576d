// torchvision's AugMix(severity, mixture_width, chain_depth, alpha,
// all_ops, interpolation, fill) on a PIL image, which it turns into a
// uint8 tensor: mixture weights from Dirichlet(alpha, alpha) and
// Dirichlet(alpha, ..., alpha), then `mixture_width` chains of 1 to 3 (or
// chain_depth) ops drawn from its space (a bin below `severity`, a sign),
// applied with torchvision's tensor arithmetic (tensor_ops.h), mixed in
// float32 with the original and truncated to uint8. The draws follow
// torchvision's distributions and order from stoker's stream of the
// sample (the Dirichlet through normalised Gamma draws).
#ifndef STOKER_DAEMON_IMAGE_AUG_MIX_H_
#define STOKER_DAEMON_IMAGE_AUG_MIX_H_

#include <cstdint>
#include <vector>

#include "daemon/image/auto_augment.h"

namespace stoker {

inline constexpr int kMaxAugMixWidth = 16;
inline constexpr int kMaxAugMixDepth = 16;

struct DrawnAugMix {
  float original = 0;          // m[:, 0]
  std::vector<float> weights;  // combined_weights, one per chain
  std::vector<DrawnOps> chains;
};

DrawnAugMix DrawAugMix(const AutoAugmentSpec& spec, ImageSize size,
                       uint64_t key);

// Most tensor ops times pixels one sample may take: mixture_width x
// chain_depth (3 when drawn) x the image's pixels.
inline constexpr double kMaxAugMixWork = 1073741824.0;

// The buffers a sample's mix reuses.
struct AugMixScratch {
  std::vector<float> mix;
  std::vector<uint8_t> chain;
  std::vector<uint8_t> op;
  size_t bytes() const {
    return mix.capacity() * sizeof(float) + chain.capacity() + op.capacity();
  }
};

// Mixes three planes of `size` in place.
void ApplyAugMix(const AutoAugmentSpec& spec, const DrawnAugMix& drawn,
                 ImageSize size, uint8_t* planes, AugMixScratch* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_AUG_MIX_H_
