// torchvision's automatic augmentation policies: TrivialAugmentWide,
// RandAugment and AutoAugment (ImageNet, CIFAR10 and SVHN policies). Each
// sample's choices (policy or op, magnitude bin, sign, whether an op
// applies) are drawn as torchvision draws them (the same ranges,
// distributions and order) from stoker's counter-based stream of that
// sample, and the magnitudes come from tables computed as torchvision
// computes them (torch.linspace in float32), so an op's output is
// torchvision's for the same draws (see augment_ops.h).
#ifndef STOKER_DAEMON_IMAGE_AUTO_AUGMENT_H_
#define STOKER_DAEMON_IMAGE_AUTO_AUGMENT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "daemon/image/augment_ops.h"

namespace stoker {

struct AutoAugmentSpec {
  enum class Kind {
    kNone,
    kTrivialAugmentWide,
    kRandAugment,
    kAutoAugment,
    kAugMix,  // drawn and applied by aug_mix.h
  };
  enum class Policy { kImageNet, kCifar10, kSvhn };
  Kind kind = Kind::kNone;
  int num_magnitude_bins = 31;        // TrivialAugmentWide, RandAugment
  int num_ops = 2;                    // RandAugment
  int magnitude = 9;                  // RandAugment: the bin every op uses
  Policy policy = Policy::kImageNet;  // AutoAugment
  // AugMix.
  int severity = 3;       // the first `severity` of 10 bins
  int mixture_width = 3;  // chains
  int chain_depth = -1;   // ops per chain; <= 0: 1 to 3, drawn per chain
  double alpha = 1.0;     // of the Dirichlet and Beta draws
  bool all_ops = true;    // with Brightness, Color, Contrast, Sharpness
  bool has_fill = false;  // AugMix: no fill is zeros, without a mask
  AugmentStyle style;
  // Tables given in place of the computed ones (empty: computed).
  std::array<std::vector<float>, kAugmentOpCount> tables;
  bool enabled() const { return kind != Kind::kNone; }
};

// Bounds the parser enforces.
inline constexpr int kMaxAugmentOps = 16;       // RandAugment.num_ops
inline constexpr int kMaxMagnitudeBins = 1024;  // num_magnitude_bins

struct DrawnOp {
  AugmentOp op = AugmentOp::kIdentity;
  double magnitude = 0.0;  // signed, as _apply_op receives it
};

struct DrawnOps {
  std::array<DrawnOp, kMaxAugmentOps> ops;
  int count = 0;
};

// torch.linspace(start, end, steps) in float32, as torch computes it.
std::vector<float> TorchLinspace(double start, double end, int steps);

// The ops of `spec`'s augmentation space, in torchvision's order.
std::vector<AugmentOp> AugmentationSpace(const AutoAugmentSpec& spec);

// The magnitudes of `op` in `spec`'s space for an image of `size` (empty:
// the op takes none), and whether a drawn sign applies: spec.tables[op]
// when given, else computed as torchvision does.
std::vector<float> MagnitudeTable(const AutoAugmentSpec& spec, AugmentOp op,
                                  ImageSize size, bool* signed_op);

// The table torchvision computes for `op` with `bins` bins (AutoAugment
// uses RandAugment's ranges with 10), by torch.linspace's scalar formula.
std::vector<float> ComputedTable(AutoAugmentSpec::Kind kind, AugmentOp op,
                                 int bins, ImageSize size, bool* signed_op);

// The ops one sample gets, from the stream keyed by `key`.
DrawnOps DrawAutoAugment(const AutoAugmentSpec& spec, ImageSize size,
                         uint64_t key);

// Applies `drawn` in order.
void ApplyDrawnOps(const DrawnOps& drawn, const AugmentStyle& style,
                   ImageSize size, uint8_t* planes,
                   std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_AUTO_AUGMENT_H_
