// resample_bench: libyuv (stoker's resampler) against OpenCV's cv::resize,
// on the same decoded pixels: time per resize for the shapes a training
// pipeline produces, and fidelity to Pillow (torchvision's resampler) on the
// committed torchvision fixtures. Built only when OpenCV is installed
// (libopencv-imgproc-dev); not part of the project's runtime.
#include <chrono>
#include <cstdio>
#include <functional>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "bench/support/dataset_gen.h"
#include "bench/support/process.h"
#include "daemon/datasets/sample_file.h"
#include "daemon/image/jpeg_decoder.h"
#include "daemon/image/sample_decoder.h"
#include "libyuv/planar_functions.h"

namespace {

using Clock = std::chrono::steady_clock;
using stoker::ImageSize;

struct Rgb {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

Rgb Decode(const std::string& path) {
  std::vector<uint8_t> bytes, buffer;
  (void)stoker::ReadFile(path, &bytes);
  stoker::JpegDecoder decoder({});
  stoker::DecodedRegion region;
  (void)decoder.DecodeRegion(
      bytes,
      [](const ImageSize& s) {
        return stoker::RegionRequest{{0, 0, s.width, s.height}, s};
      },
      &buffer, &region);
  Rgb rgb{region.size.width, region.size.height, {}};
  for (int y = 0; y < region.size.height; ++y) {
    rgb.pixels.insert(rgb.pixels.end(), region.data + y * region.stride,
                      region.data + y * region.stride + rgb.width * 3);
  }
  return rgb;
}

// stoker's path: planes, libyuv box/bilinear, interleave.
void Libyuv(const Rgb& in, int w, int h, std::vector<uint8_t>* out,
            std::vector<uint8_t>* scratch) {
  uint8_t* planes = stoker::ResampleToPlanes(
      in.pixels.data(), in.width * 3, {in.width, in.height}, {w, h},
      stoker::Interpolation::kBilinear, scratch);
  out->resize(size_t(w) * h * 3);
  const size_t n = size_t(w) * h;
  libyuv::MergeRGBPlane(planes, w, planes + n, w, planes + 2 * n, w,
                        out->data(), w * 3, w, h);
}

void OpenCv(const Rgb& in, int w, int h, int interpolation,
            std::vector<uint8_t>* out) {
  out->resize(size_t(w) * h * 3);
  const cv::Mat src(in.height, in.width, CV_8UC3,
                    const_cast<uint8_t*>(in.pixels.data()));
  cv::Mat dst(h, w, CV_8UC3, out->data());
  cv::resize(src, dst, dst.size(), 0, 0, interpolation);
}

double Mae(const std::vector<uint8_t>& a, const std::string& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += std::abs(int(a[i]) - int(uint8_t(b[i])));
  return sum / a.size();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string fixtures =
      argc > 1 ? argv[1] : "tests/fixtures/torchvision";
  cv::setNumThreads(1);
  std::vector<uint8_t> out, scratch;
  using Method = std::function<void(const Rgb&, int, int)>;
  const std::vector<std::pair<const char*, Method>> methods = {
      {"libyuv planar box/bilinear",
       [&](const Rgb& in, int w, int h) { Libyuv(in, w, h, &out, &scratch); }},
      {"OpenCV INTER_AREA",
       [&](const Rgb& in, int w, int h) {
         OpenCv(in, w, h, cv::INTER_AREA, &out);
       }},
      {"OpenCV INTER_LINEAR",
       [&](const Rgb& in, int w, int h) {
         OpenCv(in, w, h, cv::INTER_LINEAR, &out);
       }},
  };
  // Speed: a 450x390 photo-like image; shrink (the whole image to 224),
  // and enlarge (a small crop, as RandomResizedCrop at low scale gives).
  stoker::testdata::TempDir dir("stoker-resample");
  const auto jpeg = stoker::testdata::EncodeJpeg(
      stoker::testdata::RenderImage(450, 390, 1), 450, 390, 90);
  (void)stoker::testdata::WriteFile(dir.path() + "/a.jpg", *jpeg);
  const Rgb big = Decode(dir.path() + "/a.jpg");
  auto corner = [&](int w, int h) {
    Rgb r{w, h, {}};
    for (int y = 0; y < h; ++y) {
      r.pixels.insert(r.pixels.end(), big.pixels.begin() + y * 450 * 3,
                      big.pixels.begin() + (y * 450 + w) * 3);
    }
    return r;
  };
  const Rgb mid = corner(300, 260);
  const Rgb small = corner(120, 100);
  std::printf("%-28s %13s %13s %13s   %s\n", "", "450x390->224", "300x260->224",
              "120x100->224",
              "mean abs error vs Pillow (resize48x40 fixtures)");
  for (const auto& [name, run] : methods) {
    double us[3];
    const Rgb* inputs[3] = {&big, &mid, &small};
    for (int k = 0; k < 3; ++k) {
      const int reps = 300;
      run(*inputs[k], 224, 224);
      const auto start = Clock::now();
      for (int r = 0; r < reps; ++r) run(*inputs[k], 224, 224);
      us[k] = std::chrono::duration<double, std::micro>(Clock::now() - start)
                  .count() /
              reps;
    }
    std::string errors;
    for (const char* f : {"grain_0", "grain_1", "smooth_0", "smooth_1"}) {
      const Rgb in = Decode(fixtures + "/" + f + ".jpg");
      run(in, 40, 48);
      const std::string ref = stoker::testdata::ReadTextFile(
          fixtures + "/" + f + ".jpg.resize48x40.rgb");
      char text[32];
      std::snprintf(text, sizeof(text), " %s %.2f", f, Mae(out, ref));
      errors += text;
    }
    std::printf("%-28s %10.0f us %10.0f us %10.0f us  %s\n", name, us[0], us[1],
                us[2], errors.c_str());
  }
  return 0;
}
