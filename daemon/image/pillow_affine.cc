#include "daemon/image/pillow_affine.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "libyuv/rotate.h"

// Python's and Pillow's double expressions, evaluated as written.
#pragma STDC FP_CONTRACT OFF

namespace stoker {
namespace {

constexpr double kPi = 3.14159265358979323846;
// CPython's math.radians and math.degrees.
double Radians(double degrees) { return degrees * (kPi / 180.0); }

// Python's round(x, 15): the double nearest the correctly rounded decimal.
double Round15(double x) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.15f", x);
  return std::strtod(text, nullptr);
}

// Python's float modulo (the result takes the divisor's sign).
double PythonMod(double x, double m) {
  double r = std::fmod(x, m);
  if (r != 0) {
    if ((m < 0) != (r < 0)) r += m;
  } else {
    r = std::copysign(0.0, m);
  }
  return r;
}

// Pillow's COORD and FLOOR macros.
inline int Coord(double v) { return v < 0.0 ? -1 : int(v); }
inline int Floor(double v) { return v < 0.0 ? int(std::floor(v)) : int(v); }

struct Planes {
  const uint8_t* src;
  uint8_t* dst;
  size_t n;
  int width;
  int channels;
  void Copy(size_t to, int xin, int yin) const {
    const size_t from = size_t(yin) * width + xin;
    for (int c = 0; c < channels; ++c) dst[c * n + to] = src[c * n + from];
  }
};

// ImagingScaleAffine: a[1] == a[3] == 0.
void ScaleAffine(const Planes& p, ImageSize size, const AffineMatrix& a) {
  std::vector<int> xintab(size.width, 0);
  double xo = a[2] + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5;
  int xmin = size.width, xmax = 0;
  for (int x = 0; x < size.width; ++x) {
    const int xin = Coord(xo);
    if (xin >= 0 && xin < size.width) {
      xmax = x + 1;
      if (x < xmin) xmin = x;
      xintab[x] = xin;
    }
    xo += a[0];
  }
  for (int y = 0; y < size.height; ++y) {
    const int yi = Coord(yo);
    if (yi >= 0 && yi < size.height) {
      for (int x = xmin; x < xmax; ++x) {
        p.Copy(size_t(y) * size.width + x, xintab[x], yi);
      }
    }
    yo += a[4];
  }
}

bool FitsFixed(const AffineMatrix& a, int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 &&
         std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

// affine_fixed: 16.16 fixed point, nearest.
void FixedAffine(const Planes& p, ImageSize size, const AffineMatrix& a) {
  auto fix = [](double v) { return Floor(v * 65536.0 + 0.5); };
  const int a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
  int a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5);
  int a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
  for (int y = 0; y < size.height; ++y) {
    int xx = a2, yy = a5;
    for (int x = 0; x < size.width; ++x) {
      const int xin = xx >> 16;
      if (xin >= 0 && xin < size.width) {
        const int yin = yy >> 16;
        if (yin >= 0 && yin < size.height) {
          p.Copy(size_t(y) * size.width + x, xin, yin);
        }
      }
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

// ImagingTransformAffine's floating point nearest loop.
void FloatAffine(const Planes& p, ImageSize size, const AffineMatrix& a) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5;
  double yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < size.height; ++y) {
    double xx = xo, yy = yo;
    for (int x = 0; x < size.width; ++x) {
      const int xin = Coord(xx);
      if (xin >= 0 && xin < size.width) {
        const int yin = Coord(yy);
        if (yin >= 0 && yin < size.height) {
          p.Copy(size_t(y) * size.width + x, xin, yin);
        }
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

// ImagingGenericTransform with affine_transform: `filter(xin, yin, to)`
// for each output pixel `to` whose source point (xin, yin), already moved
// by -0.5 as Pillow's filters do, comes from inside the image.
template <typename Filter>
void GenericAffine(ImageSize size, const AffineMatrix& a, Filter filter) {
  const int w = size.width, h = size.height;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double xi = x + 0.5, yi = y + 0.5;
      const double xin = a[0] * xi + a[1] * yi + a[2];
      const double yin = a[3] * xi + a[4] * yi + a[5];
      if (xin < 0.0 || xin >= w || yin < 0.0 || yin >= h) continue;
      filter(xin - 0.5, yin - 0.5, size_t(y) * w + x);
    }
  }
}

// bilinear_filter32RGB.
void BilinearAffine(const Planes& p, ImageSize size, const AffineMatrix& a) {
  const int w = size.width, h = size.height;
  auto xclip = [w](int x) { return x < 0 ? 0 : x < w ? x : w - 1; };
  auto yclip = [h](int y) { return y < 0 ? 0 : y < h ? y : h - 1; };
  GenericAffine(size, a, [&](double xin, double yin, size_t to) {
    const int sx = Floor(xin), sy = Floor(yin);
    const double dx = xin - sx, dy = yin - sy;
    const size_t row0 = size_t(yclip(sy)) * w;
    const bool has_row1 = sy + 1 >= 0 && sy + 1 < h;
    const size_t row1 = has_row1 ? size_t(sy + 1) * w : row0;
    const int x0 = xclip(sx), x1 = xclip(sx + 1);
    for (int c = 0; c < p.channels; ++c) {
      const uint8_t* in = p.src + c * p.n;
      double v1 = in[row0 + x0] + (in[row0 + x1] - in[row0 + x0]) * dx;
      double v2 = v1;
      if (has_row1) {
        v2 = in[row1 + x0] + (in[row1 + x1] - in[row1 + x0]) * dx;
      }
      v1 = v1 + (v2 - v1) * dy;
      p.dst[c * p.n + to] = static_cast<uint8_t>(v1);
    }
  });
}

// Pillow's BICUBIC macro: the cubic through v1..v4 at d (in [0, 1)) from
// v2, evaluated in double as Pillow writes it.
inline double Cubic(double v1, double v2, double v3, double v4, double d) {
#pragma clang fp contract(off)
  const double p1 = v2;
  const double p2 = -v1 + v3;
  const double p3 = 2 * (v1 - v2) + v3 - v4;
  const double p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}

// bicubic_filter32RGB: four rows of four (columns clipped to the image; a
// row past the bottom repeats the one above), clamped to [0, 255] and
// truncated.
void BicubicAffine(const Planes& p, ImageSize size, const AffineMatrix& a) {
  const int w = size.width, h = size.height;
  auto xclip = [w](int x) { return x < 0 ? 0 : x < w ? x : w - 1; };
  auto yclip = [h](int y) { return y < 0 ? 0 : y < h ? y : h - 1; };
  GenericAffine(size, a, [&](double xin, double yin, size_t to) {
    const int sx = Floor(xin) - 1, sy = Floor(yin) - 1;
    const double dx = xin - (sx + 1), dy = yin - (sy + 1);
    const int xs[4] = {xclip(sx), xclip(sx + 1), xclip(sx + 2), xclip(sx + 3)};
    for (int c = 0; c < p.channels; ++c) {
      const uint8_t* in = p.src + c * p.n;
      double rows[4];
      for (int r = 0; r < 4; ++r) {
        if (r > 0 && (sy + r < 0 || sy + r >= h)) {
          rows[r] = rows[r - 1];
          continue;
        }
        const uint8_t* row = in + size_t(r == 0 ? yclip(sy) : sy + r) * w;
        rows[r] = Cubic(row[xs[0]], row[xs[1]], row[xs[2]], row[xs[3]], dx);
      }
      const double v = Cubic(rows[0], rows[1], rows[2], rows[3], dy);
      p.dst[c * p.n + to] = v <= 0.0     ? 0
                            : v >= 255.0 ? 255
                                         : static_cast<uint8_t>(v);
    }
  });
}

void Fill(uint8_t* dst, size_t n, const FillColor& fill, int channels) {
  for (int c = 0; c < channels; ++c) std::memset(dst + c * n, fill[c], n);
}

// Pillow's Transpose.ROTATE_90 / ROTATE_180 / ROTATE_270 (counter-clockwise
// quarter turns), by libyuv's blocked plane rotations (clockwise).
void Transpose(const uint8_t* src, uint8_t* dst, ImageSize size, int turns,
               int channels) {
  const libyuv::RotationMode mode = turns == 1   ? libyuv::kRotate270
                                    : turns == 2 ? libyuv::kRotate180
                                                 : libyuv::kRotate90;
  const int out_width = turns == 2 ? size.width : size.height;
  const size_t n = size.Pixels();
  for (int c = 0; c < channels; ++c) {
    libyuv::RotatePlane(src + c * n, size.width, dst + c * n, out_width,
                        size.width, size.height, mode);
  }
}

}  // namespace

AffineMatrix TorchvisionAffineMatrix(double cx, double cy, double angle,
                                     double tx, double ty, double scale,
                                     double shear_x, double shear_y) {
  const double rot = Radians(angle);
  const double sx = Radians(shear_x);
  const double sy = Radians(shear_y);
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b =
      -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d =
      -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  AffineMatrix m = {d / scale,  -b / scale, 0.0 / scale,
                    -c / scale, a / scale,  0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

void PillowAffine(const uint8_t* src, uint8_t* dst, ImageSize size,
                  const AffineMatrix& a, Interpolation interpolation,
                  const FillColor& fill, int channels) {
  const Planes p{src, dst, size.Pixels(), size.width, channels};
  Fill(dst, p.n, fill, channels);
  if (interpolation == Interpolation::kBicubic) {
    BicubicAffine(p, size, a);
  } else if (interpolation == Interpolation::kBilinear) {
    BilinearAffine(p, size, a);
  } else if (a[1] == 0 && a[3] == 0) {
    ScaleAffine(p, size, a);
  } else if (FitsFixed(a, 0, 0) && FitsFixed(a, size.width, size.height) &&
             FitsFixed(a, 0, size.height) && FitsFixed(a, size.width, 0)) {
    FixedAffine(p, size, a);
  } else {
    FloatAffine(p, size, a);
  }
}

void PillowRotate(const uint8_t* src, uint8_t* dst, ImageSize size,
                  double angle, Interpolation interpolation,
                  const FillColor& fill, int channels) {
  angle = PythonMod(angle, 360.0);
  if (angle == 0) {
    std::memcpy(dst, src, channels * size.Pixels());
    return;
  }
  if (angle == 180 ||
      ((angle == 90 || angle == 270) && size.width == size.height)) {
    Transpose(src, dst, size, int(angle) / 90, channels);
    return;
  }
  const double cx = size.width / 2.0, cy = size.height / 2.0;
  const double r = -Radians(angle);
  AffineMatrix m = {Round15(std::cos(r)),  Round15(std::sin(r)), 0.0,
                    Round15(-std::sin(r)), Round15(std::cos(r)), 0.0};
  const double x = -cx - 0, y = -cy - 0;
  const double c2 = m[0] * x + m[1] * y + m[2];
  const double c5 = m[3] * x + m[4] * y + m[5];
  m[2] = c2 + cx;
  m[5] = c5 + cy;
  PillowAffine(src, dst, size, m, interpolation, fill, channels);
}

}  // namespace stoker
