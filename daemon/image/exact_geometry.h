// ExactGeometry: what torchvision does to a PIL image, as one Pillow resize
// and a window of it, so that the sample decoder can decode only the pixels
// the window reads and resample them exactly as Pillow would.
//
//   Resize(size) [+ CenterCrop]: the whole image resized to torchvision's
//     output size (shorter side, or exact), then the centre crop, which is
//     a window of that resize (the same bytes, computed alone).
//   RandomResizedCrop: img.crop(box), then resized to the output: Pillow's
//     image is the crop itself (the filter is clamped at its edges).
#ifndef STOKER_DAEMON_IMAGE_EXACT_GEOMETRY_H_
#define STOKER_DAEMON_IMAGE_EXACT_GEOMETRY_H_

#include <optional>

#include "daemon/image/decode_types.h"
#include "daemon/image/pillow_resample.h"
#include "daemon/image/pipeline.h"

namespace stoker {

struct ExactGeometry {
  Region image;       // the image Pillow resizes, in source pixels
  ResampleBox box;    // of `image`: all of it
  ImageSize resized;  // the resize's size
  Region window;      // of the resize, the sample's pixels (pipeline.output)
  Region footprint;   // source pixels the window reads
  Region decode;      // what to decode: the footprint and a margin
  ResampleFilter filter = ResampleFilter::kBilinear;
  PassOrder order = PassOrder::kShrinkVerticalFirst;  // the reference Pillow's
};

// `footprint` of an image of `image` pixels widened by a margin for
// libjpeg-turbo's partial decode, which upsamples chroma differently at the
// edges of what it decodes: what to decode so that `footprint` is exact.
Region DecodeWindow(const Region& footprint, ImageSize image);

// nullopt where torchvision would pad (a centre crop larger than the
// resized image): the approximate path serves those.
std::optional<ExactGeometry> PlanExactGeometry(const Pipeline& pipeline,
                                               ImageSize image,
                                               const SampleParams& params,
                                               ResampleScratch* scratch);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_EXACT_GEOMETRY_H_
