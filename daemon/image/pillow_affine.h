// Pillow 9.4's affine warps, on the three uint8 planes of an RGB image, with
// Pillow's own arithmetic: Image.transform(size, AFFINE, matrix, resample,
// fillcolor) and Image.rotate(angle, resample, fillcolor=...), as
// torchvision's F.affine and F.rotate call them on PIL images. Nearest
// takes Pillow's paths exactly (a pure scale/translation table, 16.16 fixed
// point where the corners fit, floating point otherwise); bilinear and
// bicubic are its generic transform with its bilinear and bicubic filters
// (the bicubic one a 4x4 cubic of its own, not Image.resize's). Pixels that
// map outside the source keep `fill`.
#ifndef STOKER_DAEMON_IMAGE_PILLOW_AFFINE_H_
#define STOKER_DAEMON_IMAGE_PILLOW_AFFINE_H_

#include <array>
#include <cstdint>

#include "daemon/image/decode_types.h"  // ImageSize
#include "stoker/vocabulary.h"          // Interpolation

namespace stoker {

// Pillow's AFFINE data: output pixel (x, y) samples the source at
// (a0 x + a1 y + a2, a3 x + a4 y + a5), pixel centres at +0.5.
using AffineMatrix = std::array<double, 6>;
using FillColor = std::array<uint8_t, 3>;

// torchvision's _get_inverse_affine_matrix(center, angle, translate, scale,
// shear) (inverted), in its order of operations; angles in degrees.
AffineMatrix TorchvisionAffineMatrix(double cx, double cy, double angle,
                                     double tx, double ty, double scale,
                                     double shear_x, double shear_y);

// `src` and `dst` are `channels` planes of `size` (R, G, B, each
// size.Pixels() bytes; or one, a mask's) and must not overlap.
void PillowAffine(const uint8_t* src, uint8_t* dst, ImageSize size,
                  const AffineMatrix& a, Interpolation interpolation,
                  const FillColor& fill, int channels = 3);

// Image.rotate(angle) (counter-clockwise degrees, same size, centre of the
// image): 0, 90, 180 and 270 (90/270 on square images only) are Pillow's
// exact transposes, like Pillow; other angles its affine warp.
void PillowRotate(const uint8_t* src, uint8_t* dst, ImageSize size,
                  double angle, Interpolation interpolation,
                  const FillColor& fill, int channels = 3);

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_PILLOW_AFFINE_H_
