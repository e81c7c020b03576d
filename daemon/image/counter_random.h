// A counter-based random generator: the k-th value of a stream keyed by a
// 64-bit key, with nothing to carry between draws. The epoch order and each
// sample's augmentation parameters draw from it, keyed by (seed, epoch[,
// sample]), so any of them can be recomputed alone, in any order, on any
// worker.
#ifndef STOKER_DAEMON_IMAGE_COUNTER_RANDOM_H_
#define STOKER_DAEMON_IMAGE_COUNTER_RANDOM_H_

#include <cstdint>

namespace stoker {

// SplitMix64's finaliser: a bijective 64-bit mix.
uint64_t Mix64(uint64_t x);

// The k-th value of the stream keyed by `key`.
inline uint64_t CounterRandom(uint64_t key, uint64_t k) {
  return Mix64(key + (k + 1) * 0x9e3779b97f4a7c15ull);
}

// A uniform integer in [0, bound) from the stream keyed by `key`, starting at
// counter *k (advanced past the values it used). Lemire's method: unbiased.
uint64_t UniformBelow(uint64_t key, uint64_t* k, uint64_t bound);

// A uniform double in [0, 1) from the stream, 53 bits.
inline double Uniform01(uint64_t key, uint64_t* k) {
  return (CounterRandom(key, (*k)++) >> 11) * 0x1.0p-53;
}

// A uniform double in [lo, hi).
inline double Uniform(uint64_t key, uint64_t* k, double lo, double hi) {
  return lo + (hi - lo) * Uniform01(key, k);
}

// A coin of probability p, from its own stream keyed by `key`.
inline bool Chance(uint64_t key, double p) {
  uint64_t k = 0;
  return p > 0 && Uniform01(key, &k) < p;
}

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_COUNTER_RANDOM_H_
