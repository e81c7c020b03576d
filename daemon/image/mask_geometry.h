// A sample's label mask taken through the geometry its image was: the
// image's drawn parameters (SampleParams) replayed on the mask as
// torchvision's functional ops do on a PIL mask with NEAREST, so that each
// output pixel of the mask is the source pixel the image's geometry put
// there:
//
//   Resize: Pillow's Image.resize(size, NEAREST) (ImagingScaleAffine: the
//     source column of output column x is int((x + 0.5) * in / out),
//     accumulated in double as Pillow adds it);
//   RandomResizedCrop: the crop box, then that resize (F.resized_crop);
//   CenterCrop: the window of the resize;
//   RandomCrop and Pad: the same index maps as the image (RandomCropSpec),
//     every pad's fill the mask's `fill`, reflect and edge modes copying
//     mask pixels;
//   flips: mirrored;
//   RandomRotation / RandomAffine: Pillow's nearest affine with `fill`.
//
// Every step before the warp only picks pixels, so it is kept as one
// source index per output column and one per row.
#ifndef STOKER_DAEMON_IMAGE_MASK_GEOMETRY_H_
#define STOKER_DAEMON_IMAGE_MASK_GEOMETRY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "daemon/image/pipeline.h"

namespace stoker {

// Pillow's Image.resize(out, NEAREST) of an axis of `in` pixels: the
// source index of each of the `out` output indices. `tensor`: torch's
// interpolate(mode="nearest") instead, as transforms.v2 resizes a
// tv_tensors.Mask.
std::vector<int> NearestAxis(int in, int out, bool tensor = false);

// Writes the mask (`mask`, one byte per pixel, of `size`: the image's
// size) as `pipeline` made its image with `params`: pipeline.output
// pixels, one byte each, at `out`. `scratch` holds the warp's copy.
// `tensor`: resized as NearestAxis's `tensor` says. A resize to more than
// kMaxCropStage a side fails (INVALID_ARGUMENT, the sizes named).
absl::Status RenderMask(const uint8_t* mask, ImageSize size,
                        const Pipeline& pipeline, const SampleParams& params,
                        uint8_t fill, bool tensor, uint8_t* out,
                        std::vector<uint8_t>* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_MASK_GEOMETRY_H_
