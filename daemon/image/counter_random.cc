#include "daemon/image/counter_random.h"

namespace stoker {

uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

uint64_t UniformBelow(uint64_t key, uint64_t* k, uint64_t bound) {
  const uint64_t threshold = -bound % bound;
  for (;;) {
    const unsigned __int128 product =
        static_cast<unsigned __int128>(CounterRandom(key, (*k)++)) * bound;
    if (static_cast<uint64_t>(product) >= threshold) {
      return static_cast<uint64_t>(product >> 64);
    }
  }
}

}  // namespace stoker
