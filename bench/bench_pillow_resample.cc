// Speed of the Pillow-exact resampler (daemon/image/pillow_resample.h) on
// the sizes a training or evaluation pipeline resizes, one core. Prints
// microseconds per image for each case; bench/bench_pillow_resample.py runs
// it next to Pillow's own resize on the same cases.
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "daemon/image/pillow_resample.h"

namespace {

struct Case {
  const char* name;
  stoker::ImageSize src;
  stoker::ImageSize out;
  stoker::Region window;  // width 0: all of out
  stoker::ResampleFilter filter;
};

double MicrosPerImage(const Case& c, const std::vector<uint8_t>& src) {
  stoker::Region window = c.window;
  if (window.width == 0) window = {0, 0, c.out.width, c.out.height};
  std::vector<uint8_t> dst(3 * static_cast<size_t>(window.width) *
                           window.height);
  stoker::ResampleScratch scratch;
  const stoker::ResampleBox box{0, 0, static_cast<float>(c.src.width),
                                static_cast<float>(c.src.height)};
  stoker::ResampleSource source;
  source.pixels = src.data();
  source.stride = 3 * c.src.width;
  source.size = c.src;
  auto run = [&] {
    stoker::PillowResample(source, box, c.out, window, c.filter, dst.data(),
                           3 * window.width, &scratch);
  };
  run();  // warm-up
  int iterations = 0;
  const auto start = std::chrono::steady_clock::now();
  std::chrono::duration<double> elapsed{};
  do {
    run();
    ++iterations;
    elapsed = std::chrono::steady_clock::now() - start;
  } while (elapsed.count() < 1.0);
  return elapsed.count() * 1e6 / iterations;
}

}  // namespace

int main() {
  using F = stoker::ResampleFilter;
  const Case cases[] = {
      {"resize256_bilinear", {500, 375}, {341, 256}, {}, F::kBilinear},
      {"resize256_bicubic", {500, 375}, {341, 256}, {}, F::kBicubic},
      {"resize256_crop224_bilinear",
       {500, 375},
       {341, 256},
       {58, 16, 224, 224},
       F::kBilinear},
      {"shrink6x_bilinear", {2000, 1500}, {341, 256}, {}, F::kBilinear},
      {"enlarge_bicubic", {100, 80}, {224, 224}, {}, F::kBicubic},
      {"resize256_nearest", {500, 375}, {341, 256}, {}, F::kNearest},
      {"horizontal_only", {500, 256}, {341, 256}, {}, F::kBilinear},
      {"vertical_only", {341, 375}, {341, 256}, {}, F::kBilinear},
  };
  std::mt19937 rng(1);
  for (const Case& c : cases) {
    std::vector<uint8_t> src(3 * c.src.Pixels());
    for (auto& v : src) v = static_cast<uint8_t>(rng());
    std::printf("%s %.1f\n", c.name, MicrosPerImage(c, src));
  }
  return 0;
}
