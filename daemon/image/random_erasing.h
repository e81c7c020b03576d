// torchvision's RandomErasing(p, scale, ratio, value) on a sample's output
// tensor (after ToTensor and Normalize): with probability p, a box of
// random area (scale of the image) and aspect ratio (h / w, log-uniform in
// ratio) is set to a constant per channel, or to standard normal noise
// (value="random"). The box is drawn as torchvision's get_params draws it:
// up to 10 tries; none fitting leaves the image alone.
#ifndef STOKER_DAEMON_IMAGE_RANDOM_ERASING_H_
#define STOKER_DAEMON_IMAGE_RANDOM_ERASING_H_

#include <array>
#include <cstdint>

#include "daemon/image/decode_types.h"  // ImageSize, Region
#include "stoker/vocabulary.h"          // DType, Layout

namespace stoker {

struct ErasingSpec {
  bool enabled = false;
  double p = 0.5;
  double scale_min = 0.02;
  double scale_max = 0.33;
  double ratio_min = 0.3;
  double ratio_max = 3.3;
  bool random_value = false;               // normal noise
  std::array<float, 3> value = {0, 0, 0};  // per channel, else
};

// What one sample gets.
struct ErasingParams {
  bool apply = false;
  Region box;
  uint64_t noise_key = 0;  // the stream of its noise, when random
};

ErasingParams DrawErasing(const ErasingSpec& spec, ImageSize size,
                          uint64_t key);

// Erases params.box of a float32 or float16 image of `size` at `out`, in
// `layout`. Noise values are drawn channel by channel, row by row.
void ApplyErasing(const ErasingSpec& spec, const ErasingParams& params,
                  ImageSize size, DType dtype, Layout layout, uint8_t* out);

// The i-th standard normal value of the stream keyed by `key`.
float StandardNormal(uint64_t key, uint64_t i);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_RANDOM_ERASING_H_
