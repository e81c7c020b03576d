#include "bench/support/dataset_gen.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stoker::testdata {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A tiny deterministic generator (no std:: distributions: those differ
// between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(Mix(seed)) {}
  uint64_t Next() { return Mix(state_ += 0x9e3779b97f4a7c15ull); }
  double Uniform() { return (Next() >> 11) * 0x1.0p-53; }
  int Int(int lo, int hi) {
    return lo + static_cast<int>(Uniform() * (hi - lo + 1));
  }

 private:
  uint64_t state_;
};

// Smooth value noise on a grid of `cell` pixels, bilinearly interpolated.
class ValueNoise {
 public:
  ValueNoise(int width, int height, int cell, Rng& rng)
      : cell_(cell), gw_(width / cell + 2), gh_(height / cell + 2) {
    grid_.resize(size_t(gw_) * gh_);
    for (double& v : grid_) v = rng.Uniform() * 2 - 1;
  }
  double At(int x, int y) const {
    const double fx = double(x) / cell_, fy = double(y) / cell_;
    const int ix = int(fx), iy = int(fy);
    const double tx = fx - ix, ty = fy - iy;
    auto g = [&](int gx, int gy) { return grid_[size_t(gy) * gw_ + gx]; };
    const double top = g(ix, iy) * (1 - tx) + g(ix + 1, iy) * tx;
    const double bottom = g(ix, iy + 1) * (1 - tx) + g(ix + 1, iy + 1) * tx;
    return top * (1 - ty) + bottom * ty;
  }

 private:
  int cell_, gw_, gh_;
  std::vector<double> grid_;
};

struct Ellipse {
  double cx, cy, rx, ry;
  double color[3];
};

}  // namespace

std::vector<uint8_t> RenderImage(int width, int height, uint64_t seed,
                                 bool smooth) {
  Rng rng(seed);
  double top[3], bottom[3];
  for (int c = 0; c < 3; ++c) {
    top[c] = rng.Uniform() * 255;
    bottom[c] = rng.Uniform() * 255;
  }
  std::vector<Ellipse> shapes(rng.Int(3, 8));
  for (Ellipse& e : shapes) {
    e = {rng.Uniform() * width,
         rng.Uniform() * height,
         (0.05 + rng.Uniform() * 0.3) * width,
         (0.05 + rng.Uniform() * 0.3) * height,
         {rng.Uniform() * 255, rng.Uniform() * 255, rng.Uniform() * 255}};
  }
  const ValueNoise coarse(width, height, 48, rng);
  const ValueNoise fine(width, height, 3, rng);
  std::vector<uint8_t> pixels(size_t(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    const double t = double(y) / std::max(1, height - 1);
    for (int x = 0; x < width; ++x) {
      double rgb[3];
      for (int c = 0; c < 3; ++c) rgb[c] = top[c] * (1 - t) + bottom[c] * t;
      for (const Ellipse& e : shapes) {
        const double dx = (x - e.cx) / e.rx, dy = (y - e.cy) / e.ry;
        if (dx * dx + dy * dy <= 1) {
          for (int c = 0; c < 3; ++c) rgb[c] = 0.3 * rgb[c] + 0.7 * e.color[c];
        }
      }
      const double texture =
          40 * coarse.At(x, y) + (smooth ? 0 : 30 * fine.At(x, y));
      const double grain = smooth ? 0 : (rng.Uniform() - 0.5) * 64;
      uint8_t* out = &pixels[(size_t(y) * width + x) * 3];
      for (int c = 0; c < 3; ++c) {
        out[c] = static_cast<uint8_t>(
            std::clamp(rgb[c] + texture + grain, 0.0, 255.0));
      }
    }
  }
  return pixels;
}

absl::StatusOr<std::vector<uint8_t>> EncodeJpeg(
    const std::vector<uint8_t>& pixels, int width, int height, int quality,
    bool grayscale, bool progressive) {
  tjhandle handle = tjInitCompress();
  if (handle == nullptr) return absl::InternalError("tjInitCompress failed");
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(handle, pixels.data(), width, 0, height,
                             grayscale ? TJPF_GRAY : TJPF_RGB, &jpeg, &size,
                             grayscale ? TJSAMP_GRAY : TJSAMP_420, quality,
                             progressive ? TJFLAG_PROGRESSIVE : 0);
  absl::StatusOr<std::vector<uint8_t>> result =
      rc == 0 ? absl::StatusOr<std::vector<uint8_t>>(
                    std::vector<uint8_t>(jpeg, jpeg + size))
              : absl::InternalError(
                    absl::StrCat("tjCompress2: ", tjGetErrorStr2(handle)));
  tjFree(jpeg);
  tjDestroy(handle);
  return result;
}

absl::Status WriteFile(const std::string& path,
                       const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<GeneratedDataset> GenerateImageFolder(
    const std::string& root, const DatasetOptions& options) {
  GeneratedDataset dataset;
  for (int c = 0; c < options.classes; ++c) {
    const std::string name = absl::StrFormat("class_%03d", c);
    const std::string dir = root + "/" + name;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("mkdir ", dir, ": ", ec.message()));
    }
    dataset.class_names.push_back(name);
    for (int i = 0; i < options.images_per_class; ++i) {
      const uint64_t seed = Mix(options.seed * 1000003 + c * 7919 + i);
      Rng size_rng(seed ^ 0x5151);
      int w = options.width, h = options.height;
      if (options.vary_size) {
        w = static_cast<int>(w * (0.8 + 0.2 * size_rng.Uniform()));
        h = static_cast<int>(h * (0.8 + 0.2 * size_rng.Uniform()));
      }
      auto jpeg = EncodeJpeg(RenderImage(w, h, seed, options.smooth), w, h,
                             options.quality);
      if (!jpeg.ok()) return jpeg.status();
      const std::string path = absl::StrFormat("%s/img_%05d.jpg", dir, i);
      if (absl::Status s = WriteFile(path, *jpeg); !s.ok()) return s;
      dataset.paths.push_back(path);
      dataset.labels.push_back(c);
      dataset.total_bytes += jpeg->size();
    }
  }
  return dataset;
}

}  // namespace stoker::testdata
