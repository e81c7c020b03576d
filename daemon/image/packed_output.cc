#include "daemon/image/packed_output.h"

#include <cstring>

#include "libyuv/planar_functions.h"

namespace stoker {

bool FlipIsTheOnlyImageOp(const Pipeline& p) {
  // Each stage of SampleDecoder::ApplyStage but the flip, off: a new
  // stage must be counted here too.
  static_assert(kImageStages == 8);
  return p.choice == nullptr && p.vflip_p == 0 && !p.warp.enabled() &&
         !p.jitter() && p.gray_p == 0 && !p.blur.enabled && p.solarize.p == 0 &&
         !p.augment.enabled();
}

namespace {

// out[c][i] (NCHW) or out[i][c] (NHWC) = lut[c][pixel i's channel c], the
// pixels read from `packed` with each row mirrored if `flip`.
template <typename T>
void LookUp(const uint8_t* packed, bool flip, ImageSize size, bool nchw,
            const T (&lut)[3][256], T* out) {
  const size_t n = size.Pixels();
  for (int y = 0; y < size.height; ++y) {
    const uint8_t* row = packed + size_t(y) * size.width * 3;
    const size_t first = size_t(y) * size.width;
    for (int x = 0; x < size.width; ++x) {
      const uint8_t* px = row + 3 * (flip ? size.width - 1 - x : x);
      const size_t i = first + x;
      if (nchw) {
        out[i] = lut[0][px[0]];
        out[n + i] = lut[1][px[1]];
        out[2 * n + i] = lut[2][px[2]];
      } else {
        out[3 * i] = lut[0][px[0]];
        out[3 * i + 1] = lut[1][px[1]];
        out[3 * i + 2] = lut[2][px[2]];
      }
    }
  }
}

}  // namespace

void WritePackedOutput(const uint8_t* packed, bool flip, const Pipeline& p,
                       const ValueTable& values, uint8_t* out,
                       std::vector<uint8_t>* scratch) {
  const ImageSize o = p.output;
  const int row_bytes = 3 * o.width;
  const bool nchw = p.layout == Layout::kNCHW;
  if (p.dtype == DType::kFloat32) {
    return LookUp(packed, flip, o, nchw, values.f32,
                  reinterpret_cast<float*>(out));
  }
  if (p.dtype == DType::kFloat16) {
    return LookUp(packed, flip, o, nchw, values.f16,
                  reinterpret_cast<uint16_t*>(out));
  }
  if (!nchw) {
    if (flip) {
      libyuv::RGB24Mirror(packed, row_bytes, out, row_bytes, o.width, o.height);
    } else {
      std::memcpy(out, packed, size_t(row_bytes) * o.height);
    }
    return;
  }
  if (flip) {
    scratch->resize(size_t(row_bytes) * o.height);
    libyuv::RGB24Mirror(packed, row_bytes, scratch->data(), row_bytes, o.width,
                        o.height);
    packed = scratch->data();
  }
  const size_t n = o.Pixels();
  libyuv::SplitRGBPlane(packed, row_bytes, out, o.width, out + n, o.width,
                        out + 2 * n, o.width, o.width, o.height);
}

}  // namespace stoker
