// torchvision's Pad and RandomCrop(size, padding, pad_if_needed, fill,
// padding_mode) on a PIL image: pads (Pillow's ImageOps.expand for
// "constant", numpy.pad for "edge", "reflect" and "symmetric"), then a crop
// of `size` at a uniformly drawn place. Padding only ever copies pixels, so
// it is done here as index maps, one per axis: output column x is column
// xs[x] of the image the crop reads (or a fill), and the same for rows.
// The maps are built with numpy's own algorithm (reflect and symmetric
// padding wider than the image are reflected piecewise, as numpy does).
#ifndef STOKER_DAEMON_IMAGE_RANDOM_CROP_H_
#define STOKER_DAEMON_IMAGE_RANDOM_CROP_H_

#include <array>
#include <cstdint>
#include <vector>

#include "daemon/image/decode_types.h"  // ImageSize, Region

namespace stoker {

enum class PadMode { kConstant, kEdge, kReflect, kSymmetric };

struct PadSpec {
  int left = 0, top = 0, right = 0, bottom = 0;
  PadMode mode = PadMode::kConstant;
  std::array<uint8_t, 3> fill = {0, 0, 0};
  bool any() const { return left > 0 || top > 0 || right > 0 || bottom > 0; }
};

struct RandomCropSpec {
  bool enabled = false;
  PadSpec pad;      // a Pad before the RandomCrop
  PadSpec padding;  // the RandomCrop's own padding (its fill and mode also
                    // serve pad_if_needed)
  bool pad_if_needed = false;
  // pad_if_needed pads the right and bottom only (the segmentation
  // reference's pad_if_smaller).
  bool pad_end = false;
  // The horizontal flip comes before the pads and the crop (the reference's
  // order): a flipped sample's end padding lies on the flipped image's
  // right, so here, before the flip, on the left.
  bool after_flip = false;
  // numpy >= 2.1's reflection of pads wider than the image: chunks of whole
  // periods of the image (before: any length already filled).
  bool whole_periods = true;
};

// What one sample gets: where the crop sits in the padded image.
struct CropParams {
  ImageSize stage;   // the image before the pads (resized, if it is)
  ImageSize padded;  // the image after every pad
  int top = 0, left = 0;
  bool fits = true;        // false: the padded image is smaller than the crop
  bool too_large = false;  // the image (resized) is above kMaxCropStage
  Region touched;          // the pixels of the unpadded image the crop reads
};

// Largest side of the image a RandomCrop pads and crops (after a resize):
// its index maps are built whole.
inline constexpr int kMaxCropStage = 1 << 16;

// Index maps of one sample: >= 0 a pixel of the unpadded image (of the
// stage before the pads), kFillPad / kFillPadding that pad's fill.
inline constexpr int kFillPad = -1;
inline constexpr int kFillPadding = -2;
struct CropMaps {
  std::vector<int> xs, ys;
};

// Draws the crop of `output` from an image of `stage` pixels, as
// RandomCrop.get_params draws it: no draw when the padded image is the
// crop's size, else a row and a column uniform over the places that fit.
// `flipped`: the sample's horizontal flip was drawn (RandomCropSpec::
// after_flip).
CropParams DrawRandomCrop(const RandomCropSpec& spec, ImageSize stage,
                          ImageSize output, uint64_t key, bool flipped,
                          CropMaps* maps);

// Writes the crop into three planes of `output` (`out`), reading the
// three planes of params.touched at `touched` (its own width as stride).
void ApplyRandomCrop(const RandomCropSpec& spec, const CropMaps& maps,
                     const Region& touched, const uint8_t* touched_planes,
                     ImageSize output, uint8_t* out);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_RANDOM_CROP_H_
