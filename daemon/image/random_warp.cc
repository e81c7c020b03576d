#include "daemon/image/random_warp.h"

#include <cmath>
#include <cstring>

#include "daemon/image/counter_random.h"

namespace stoker {
namespace {

// torch.empty(1).uniform_(lo, hi).item(): a float32 value.
double UniformFloat(uint64_t key, uint64_t* k, double lo, double hi) {
  return double(float(Uniform(key, k, lo, hi)));
}

// F.rotate or F.affine on `channels` planes of `size`, in place.
void Warp(WarpSpec::Kind kind, const WarpParams& w, ImageSize size,
          Interpolation interpolation, const FillColor& fill, int channels,
          uint8_t* planes, std::vector<uint8_t>* scratch) {
  if (kind == WarpSpec::Kind::kNone || !w.apply) return;
  const size_t bytes = channels * size.Pixels();
  scratch->resize(bytes);
  if (kind == WarpSpec::Kind::kRotation) {
    PillowRotate(planes, scratch->data(), size, w.angle, interpolation, fill,
                 channels);
  } else {
    const AffineMatrix m =
        TorchvisionAffineMatrix(size.width * 0.5, size.height * 0.5, w.angle,
                                w.tx, w.ty, w.scale, w.shear_x, w.shear_y);
    PillowAffine(planes, scratch->data(), size, m, interpolation, fill,
                 channels);
  }
  std::memcpy(planes, scratch->data(), bytes);
}

}  // namespace

WarpParams DrawWarp(const WarpSpec& spec, ImageSize size, uint64_t key) {
  WarpParams w;
  if (!spec.enabled()) return w;
  // The coin has its own stream: the parameters stay those of p = 1.
  w.apply = spec.p >= 1 || Chance(Mix64(key ^ 0x9a12), spec.p);
  uint64_t k = 0;
  w.angle = UniformFloat(key, &k, spec.degrees_min, spec.degrees_max);
  if (spec.kind == WarpSpec::Kind::kRotation) return w;
  if (spec.translate) {
    // int(round(uniform(-max_d, max_d))), Python's rounding (half to even).
    const double max_dx = spec.translate_x * size.width;
    const double max_dy = spec.translate_y * size.height;
    w.tx = int(std::nearbyint(UniformFloat(key, &k, -max_dx, max_dx)));
    w.ty = int(std::nearbyint(UniformFloat(key, &k, -max_dy, max_dy)));
  }
  if (spec.scale) {
    w.scale = UniformFloat(key, &k, spec.scale_min, spec.scale_max);
  }
  if (spec.shear_x) {
    w.shear_x = UniformFloat(key, &k, spec.shear_x_min, spec.shear_x_max);
  }
  if (spec.shear_y) {
    w.shear_y = UniformFloat(key, &k, spec.shear_y_min, spec.shear_y_max);
  }
  return w;
}

void ApplyWarp(const WarpSpec& spec, const WarpParams& w, ImageSize size,
               uint8_t* planes, std::vector<uint8_t>* scratch) {
  Warp(spec.kind, w, size, spec.style.interpolation, spec.style.fill, 3, planes,
       scratch);
}

void ApplyMaskWarp(const WarpSpec& spec, const WarpParams& w, ImageSize size,
                   uint8_t fill, uint8_t* plane,
                   std::vector<uint8_t>* scratch) {
  Warp(spec.kind, w, size, Interpolation::kNearest, {fill, fill, fill}, 1,
       plane, scratch);
}

}  // namespace stoker
