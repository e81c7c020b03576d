// Resampling exactly as Pillow does it (Image.resize, Pillow 9.x, the
// library under torchvision's PIL transforms): the same output bytes for
// the same input, size, filter and box.
//
// Pillow resizes in two separable passes over 8-bit pixels, each clipped to
// 0..255 (Resample.c), horizontal then vertical until Pillow 12.1; since
// then some resizes run the vertical pass first (PassOrder), which rounds
// the intermediate image otherwise. For every output index it
// centres the filter at in0 + (i + 0.5) * scale, widens its support by the
// scale when shrinking (antialiasing), clamps the taps to the image, divides
// the weights by their sum and rounds them to 22-bit fixed point. NEAREST is
// not a filter there but an affine point sampling whose source position is
// accumulated in double precision (Geometry.c, ImagingScaleAffine). The box
// is kept in single precision, as Pillow's C layer receives it.
//
// A window of the output can be computed alone: resize-then-crop
// (torchvision's Resize + CenterCrop) gives the same bytes as the whole
// resize cropped, for a fraction of the work.
//
// Thread-safety: functions are reentrant; a ResampleScratch belongs to one
// thread.
#ifndef STOKER_DAEMON_IMAGE_PILLOW_RESAMPLE_H_
#define STOKER_DAEMON_IMAGE_PILLOW_RESAMPLE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "daemon/image/decode_types.h"

namespace stoker {

enum class ResampleFilter { kNearest, kBilinear, kBicubic };

// A source rectangle in pixel coordinates (x1, y1 exclusive), as floats.
struct ResampleBox {
  float x0 = 0;
  float y0 = 0;
  float x1 = 0;
  float y1 = 0;
};

// Fixed-point weights of one axis, for outputs first .. first + count - 1:
// output i reads `taps[i]` inputs from `start[i]`, weighted by
// weights[i * ksize ..], zero past its taps (ksize is a multiple of 4).
// Built as Pillow's precompute_coeffs and normalize_coeffs_8bpc build them.
// `split` holds the same weights for 16-bit multiplies, k = hi * 2048 + lo:
// per output, per 4 taps t0..t3, 16 values hi (k >> 11) then 16 lo
// (k & 2047), each as [t0, t1] four times, then [t2, t3] four times.
struct AxisWeights {
  // What they were computed for: asked again, ComputeAxisWeights keeps them
  // (a sample's footprint and its resample; images of the same size).
  struct Key {
    int in_size = 0;
    float in0 = 0;
    float in1 = 0;
    int out_size = 0;
    int first = 0;
    int count = 0;
    ResampleFilter filter = ResampleFilter::kBilinear;
    bool operator==(const Key&) const = default;
  };
  std::optional<Key> key;
  int ksize = 0;
  std::vector<int> start;
  std::vector<int> taps;
  std::vector<int32_t> weights;
  std::vector<int16_t> split;
};
void ComputeAxisWeights(int in_size, float in0, float in1, int out_size,
                        int first, int count, ResampleFilter filter,
                        AxisWeights* out);

// Pillow's NEAREST positions: the source index of outputs first ..
// first + count - 1 (-1 where it falls outside the image).
void ComputeNearestIndices(int in_size, float in0, float in1, int out_size,
                           int first, int count, std::vector<int>* out);

// Which pass Pillow runs first where it runs both, by version:
//   kHorizontalFirst      always horizontal (Pillow up to 12.1);
//   kTallVerticalFirst    vertical for images over 100 times taller than
//                         wide whose height shrinks (12.2 and 12.3, in
//                         Image.resize);
//   kShrinkVerticalFirst  vertical where the height shrinks by more than
//                         twice what the width shrinks by, in pixels of the
//                         image (not the box): H - h > 0 and
//                         H - h > 2 (W - w) (13.0, ImagingResample).
enum class PassOrder {
  kHorizontalFirst,
  kTallVerticalFirst,
  kShrinkVerticalFirst
};
PassOrder PillowPassOrder(int major, int minor);
bool VerticalFirst(PassOrder order, ImageSize image, ImageSize out_size);

// kBest: AVX2 where the CPU has it; kPortable: plain C++ everywhere. Both
// give the same bytes.
enum class ResampleKernels { kBest, kPortable };

struct ResampleScratch {
  AxisWeights horizontal;
  AxisWeights vertical;
  std::vector<int> columns;
  std::vector<int> rows;
  std::vector<uint8_t> pass;  // the horizontal pass's rows
};

// The image Pillow resizes, or the part of it a window reads: `pixels`
// points at pixel (available.x, available.y) of an image of `size` pixels
// (the filter is clamped at its edges), packed RGB, `stride` bytes a row.
struct ResampleSource {
  const uint8_t* pixels = nullptr;
  int stride = 0;
  ImageSize size;
  Region available;                                   // default: all of it
  PassOrder order = PassOrder::kShrinkVerticalFirst;  // the reference's
};

// The pixels of `size` that `window` of the resize reads.
Region ResampleFootprint(ImageSize size, ResampleBox box, ImageSize out_size,
                         Region window, ResampleFilter filter,
                         ResampleScratch* scratch);

// Writes `window` (in output pixels) of Pillow's
// image.resize((out_size.width, out_size.height), filter, box) as packed
// RGB (3 bytes a pixel, `dst_stride` bytes a row) to `dst`. The box must lie
// inside the image, the window inside out_size, and the source must hold
// the window's footprint.
void PillowResample(const ResampleSource& src, ResampleBox box,
                    ImageSize out_size, Region window, ResampleFilter filter,
                    uint8_t* dst, int dst_stride, ResampleScratch* scratch,
                    ResampleKernels kernels = ResampleKernels::kBest);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PILLOW_RESAMPLE_H_
