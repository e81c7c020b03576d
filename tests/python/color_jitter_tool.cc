// Runs one of stoker's ColorJitter adjustments on a file of packed RGB
// pixels, for tests/python/test_color_jitter.py to compare with torchvision
// itself:
//   color_jitter_tool IN OUT brightness|contrast|saturation FACTOR
//   color_jitter_tool IN OUT hue HUE_FACTOR   (in [-0.5, 0.5])
// The adjustment sees the whole file as one image (contrast takes its mean).
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/image/color_jitter.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: color_jitter_tool IN OUT OP FACTOR\n";
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  const std::vector<uint8_t> packed((std::istreambuf_iterator<char>(file)),
                                    std::istreambuf_iterator<char>());
  const size_t n = packed.size() / 3;
  if (n == 0 || packed.size() % 3 != 0) {
    std::cerr << argv[1] << ": not packed RGB\n";
    return 1;
  }
  std::vector<uint8_t> planes(3 * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < 3; ++c) planes[c * n + i] = packed[3 * i + c];
  }
  const std::string op = argv[3];
  const double factor = std::strtod(argv[4], nullptr);
  if (op == "brightness") {
    stoker::AdjustBrightness(planes.data(), n, static_cast<float>(factor));
  } else if (op == "contrast") {
    stoker::AdjustContrast(planes.data(), n, static_cast<float>(factor));
  } else if (op == "saturation") {
    stoker::AdjustSaturation(planes.data(), n, static_cast<float>(factor));
  } else if (op == "hue") {
    stoker::AdjustHue(planes.data(), n, stoker::HueShift(factor));
  } else {
    std::cerr << "unknown op " << op << "\n";
    return 2;
  }
  std::vector<uint8_t> out(3 * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < 3; ++c) out[3 * i + c] = planes[c * n + i];
  }
  std::ofstream(argv[2], std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()),
             static_cast<std::streamsize>(out.size()));
  return 0;
}
