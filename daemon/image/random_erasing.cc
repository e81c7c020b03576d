#include "daemon/image/random_erasing.h"

#include <cmath>

#include "daemon/image/counter_random.h"
#include "daemon/image/sample_decoder.h"  // FloatToHalf

namespace stoker {

ErasingParams DrawErasing(const ErasingSpec& spec, ImageSize size,
                          uint64_t key) {
  ErasingParams params;
  if (!spec.enabled) return params;
  uint64_t k = 0;
  if (!(Uniform01(key, &k) < spec.p)) return params;
  const double area = double(size.width) * size.height;
  const double log_min = std::log(spec.ratio_min);
  const double log_max = std::log(spec.ratio_max);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double erase_area =
        area * Uniform(key, &k, spec.scale_min, spec.scale_max);
    const double aspect = std::exp(Uniform(key, &k, log_min, log_max));
    // int(round(...)): Python rounds half to even.
    const int h = int(std::nearbyint(std::sqrt(erase_area * aspect)));
    const int w = int(std::nearbyint(std::sqrt(erase_area / aspect)));
    if (!(h < size.height && w < size.width)) continue;
    const int y = int(UniformBelow(key, &k, uint64_t(size.height - h + 1)));
    const int x = int(UniformBelow(key, &k, uint64_t(size.width - w + 1)));
    params.apply = true;
    params.box = {x, y, w, h};
    params.noise_key = Mix64(key ^ 0x0015e);
    return params;
  }
  return params;
}

float StandardNormal(uint64_t key, uint64_t i) {
  // Box-Muller on two uniforms in (0, 1].
  const double u1 = ((CounterRandom(key, 2 * i) >> 11) + 1) * 0x1.0p-53;
  const double u2 = (CounterRandom(key, 2 * i + 1) >> 11) * 0x1.0p-53;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
}

void ApplyErasing(const ErasingSpec& spec, const ErasingParams& params,
                  ImageSize size, DType dtype, Layout layout, uint8_t* out) {
  if (!params.apply || dtype == DType::kUInt8) return;
  const Region& b = params.box;
  const size_t n = size.Pixels();
  const bool nchw = layout == Layout::kNCHW;
  uint64_t i = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = b.y; y < b.y + b.height; ++y) {
      for (int x = b.x; x < b.x + b.width; ++x) {
        const float v = spec.random_value
                            ? StandardNormal(params.noise_key, i++)
                            : spec.value[c];
        const size_t pixel = size_t(y) * size.width + x;
        const size_t at = nchw ? c * n + pixel : pixel * 3 + c;
        if (dtype == DType::kFloat32) {
          reinterpret_cast<float*>(out)[at] = v;
        } else {
          reinterpret_cast<uint16_t*>(out)[at] = FloatToHalf(v);
        }
      }
    }
  }
}

}  // namespace stoker
