#include "daemon/image/exact_geometry.h"

#include <algorithm>

namespace stoker {
namespace {

// libjpeg-turbo's fancy upsampling takes each output pixel's chroma from
// its own sample and a neighbour's; at the left and right edges of a
// cropped decode (jpeg_crop_scanline) it has no neighbour and repeats the
// edge, so the outermost column on each side differs from a full decode.
// Rows are exact from the first one after jpeg_skip_scanlines to the last
// one read: the decoder reads the rows around them for context itself.
// One pixel would do; two leave room (tests/partial_decode_test.cc checks
// every subsampling, progressive files included).
constexpr int kDecodeMargin = 2;

}  // namespace

Region DecodeWindow(const Region& f, ImageSize image) {
  const int x0 = std::max(f.x - kDecodeMargin, 0);
  const int y0 = std::max(f.y - kDecodeMargin, 0);
  const int x1 = std::min(f.x + f.width + kDecodeMargin, image.width);
  const int y1 = std::min(f.y + f.height + kDecodeMargin, image.height);
  return {x0, y0, x1 - x0, y1 - y0};
}

std::optional<ExactGeometry> PlanExactGeometry(const Pipeline& p,
                                               ImageSize image,
                                               const SampleParams& params,
                                               ResampleScratch* scratch) {
  ExactGeometry g;
  g.order = p.resample_order;
  g.filter =
      p.interpolation == Interpolation::kNearest   ? ResampleFilter::kNearest
      : p.interpolation == Interpolation::kBicubic ? ResampleFilter::kBicubic
                                                   : ResampleFilter::kBilinear;
  if (p.geometry == Pipeline::Geometry::kRandomResizedCrop) {
    g.image = params.box;
    g.resized = p.output;
    g.window = {0, 0, p.output.width, p.output.height};
  } else if (p.geometry == Pipeline::Geometry::kRandomCrop) {
    // The resize, read only where the crop reads it (no resize: the
    // sample decoder takes the pixels as they are).
    if (!ResizesBeforeCrop(p) || !params.crop.fits) return std::nullopt;
    g.image = {0, 0, image.width, image.height};
    g.resized = params.crop.stage;
    g.window = params.crop.touched;
  } else {
    g.image = {0, 0, image.width, image.height};
    g.resized = TorchvisionResizedSize(image, p);
    if (g.resized.width < p.output.width ||
        g.resized.height < p.output.height) {
      return std::nullopt;
    }
    g.window = CenterCropWindow(g.resized, p.output);
  }
  if (g.image.width <= 0 || g.image.height <= 0 || g.resized.width <= 0 ||
      g.resized.height <= 0) {
    return std::nullopt;
  }
  g.box = {0, 0, static_cast<float>(g.image.width),
           static_cast<float>(g.image.height)};
  const ImageSize size{g.image.width, g.image.height};
  g.footprint =
      ResampleFootprint(size, g.box, g.resized, g.window, g.filter, scratch);
  g.footprint.x += g.image.x;
  g.footprint.y += g.image.y;
  g.decode = DecodeWindow(g.footprint, image);
  return g;
}

}  // namespace stoker
