#include "daemon/image/aug_mix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "daemon/image/counter_random.h"
#include "daemon/image/tensor_ops.h"

namespace stoker {
namespace {

// A standard normal value (Box-Muller) from the stream.
double Normal(uint64_t key, uint64_t* k) {
  const double u1 = 1.0 - Uniform01(key, k);  // (0, 1]
  const double u2 = Uniform01(key, k);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// Gamma(a, 1) by Marsaglia and Tsang (a < 1 boosted through a + 1).
double Gamma(double a, uint64_t key, uint64_t* k) {
  if (a < 1.0) {
    const double u = 1.0 - Uniform01(key, k);
    return Gamma(a + 1.0, key, k) * std::pow(u, 1.0 / a);
  }
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = Normal(key, k);
    const double v = std::pow(1.0 + c * x, 3);
    if (v <= 0) continue;
    const double u = 1.0 - Uniform01(key, k);
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

// Dirichlet(alpha, ..., alpha) of `count` parts, as float32.
std::vector<float> Dirichlet(double alpha, int count, uint64_t key,
                             uint64_t* k) {
  std::vector<double> g(count);
  double sum = 0;
  // As torch, no draw below the smallest normal float (no 0 / 0).
  for (double& v : g) {
    sum += (v = std::max(Gamma(alpha, key, k),
                         double(std::numeric_limits<float>::min())));
  }
  std::vector<float> out(count);
  for (int i = 0; i < count; ++i) out[i] = float(g[i] / sum);
  return out;
}

}  // namespace

DrawnAugMix DrawAugMix(const AutoAugmentSpec& spec, ImageSize size,
                       uint64_t key) {
  DrawnAugMix d;
  uint64_t k = 0;
  const std::vector<float> m = Dirichlet(spec.alpha, 2, key, &k);
  d.original = m[0];
  d.weights = Dirichlet(spec.alpha, spec.mixture_width, key, &k);
  for (float& w : d.weights) w *= m[1];
  const std::vector<AugmentOp> space = AugmentationSpace(spec);
  d.chains.resize(spec.mixture_width);
  for (DrawnOps& chain : d.chains) {
    chain.count = spec.chain_depth > 0
                      ? std::min(spec.chain_depth, kMaxAugMixDepth)
                      : int(1 + UniformBelow(key, &k, 3));
    for (int i = 0; i < chain.count; ++i) {
      const AugmentOp op = space[UniformBelow(key, &k, space.size())];
      bool is_signed = false;
      const std::vector<float> table =
          MagnitudeTable(spec, op, size, &is_signed);
      double magnitude = 0.0;
      if (!table.empty()) {
        magnitude = table[UniformBelow(key, &k, uint64_t(spec.severity))];
      }
      if (is_signed && UniformBelow(key, &k, 2) == 1) magnitude *= -1.0;
      chain.ops[i] = {op, magnitude};
    }
  }
  return d;
}

void ApplyAugMix(const AutoAugmentSpec& spec, const DrawnAugMix& drawn,
                 ImageSize size, uint8_t* planes, AugMixScratch* scratch) {
  const size_t values = 3 * size.Pixels();
  std::vector<float>& mix = scratch->mix;
  std::vector<uint8_t>& aug = scratch->chain;
  mix.resize(values);
  aug.resize(values);
  for (size_t i = 0; i < values; ++i)
    mix[i] = drawn.original * float(planes[i]);
  TensorStyle style;
  style.interpolation = spec.style.interpolation;
  if (spec.has_fill) style.fill = spec.style.fill;
  for (size_t c = 0; c < drawn.chains.size(); ++c) {
    std::memcpy(aug.data(), planes, values);
    const DrawnOps& chain = drawn.chains[c];
    for (int i = 0; i < chain.count; ++i) {
      ApplyTensorOp(chain.ops[i].op, chain.ops[i].magnitude, style, size,
                    aug.data(), &scratch->op);
    }
    const float w = drawn.weights[c];
    for (size_t i = 0; i < values; ++i) mix[i] += w * float(aug[i]);
  }
  for (size_t i = 0; i < values; ++i) {
    planes[i] = uint8_t(std::min(std::max(mix[i], 0.0f), 255.0f));
  }
}

}  // namespace stoker
