// Runs stoker's Pillow-exact resampler on cases read from a file, for
// tests/python/test_resample.py to compare with Pillow itself. Each line:
//   IN W H FILTER X0 Y0 X1 Y1 OUT_W OUT_H WIN_X WIN_Y WIN_W WIN_H OUT
// IN is packed RGB (W x H), FILTER nearest|bilinear|bicubic, the box is
// read as double and narrowed to float (as Pillow's C layer does), and OUT
// receives the window of the resized image, packed RGB. With --portable,
// the portable kernels run instead of the best the CPU has; with
// --pillow=MAJOR.MINOR, the passes run in that Pillow's order (default:
// the newest's).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/image/pillow_resample.h"

namespace {

bool ParseFilter(const std::string& name, stoker::ResampleFilter* filter) {
  if (name == "nearest")
    *filter = stoker::ResampleFilter::kNearest;
  else if (name == "bilinear")
    *filter = stoker::ResampleFilter::kBilinear;
  else if (name == "bicubic")
    *filter = stoker::ResampleFilter::kBicubic;
  else
    return false;
  return true;
}

bool RunCase(const std::string& line, stoker::ResampleKernels kernels,
             stoker::PassOrder order, stoker::ResampleScratch* scratch) {
  std::istringstream in(line);
  std::string src_path, filter_name, out_path;
  stoker::ImageSize src_size, out_size;
  double box[4];
  stoker::Region window;
  if (!(in >> src_path >> src_size.width >> src_size.height >> filter_name >>
        box[0] >> box[1] >> box[2] >> box[3] >> out_size.width >>
        out_size.height >> window.x >> window.y >> window.width >>
        window.height >> out_path)) {
    std::cerr << "cannot parse: " << line << "\n";
    return false;
  }
  stoker::ResampleFilter filter;
  if (!ParseFilter(filter_name, &filter)) {
    std::cerr << "unknown filter " << filter_name << "\n";
    return false;
  }
  std::ifstream file(src_path, std::ios::binary);
  std::vector<uint8_t> src((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
  if (src.size() != 3 * src_size.Pixels()) {
    std::cerr << src_path << ": " << src.size() << " bytes, not "
              << 3 * src_size.Pixels() << "\n";
    return false;
  }
  const stoker::ResampleBox b{
      static_cast<float>(box[0]), static_cast<float>(box[1]),
      static_cast<float>(box[2]), static_cast<float>(box[3])};
  std::vector<uint8_t> out(3 * static_cast<size_t>(window.width) *
                           window.height);
  // Only the window's footprint is handed over, as the decoders do, in a
  // buffer of its own: a read outside it would take other pixels (and the
  // test would see them), or run past the buffer's end.
  const stoker::Region footprint =
      stoker::ResampleFootprint(src_size, b, out_size, window, filter, scratch);
  const size_t footprint_stride = 3 * static_cast<size_t>(footprint.width);
  std::vector<uint8_t> held(footprint_stride * footprint.height);
  for (int y = 0; y < footprint.height; ++y) {
    std::memcpy(held.data() + y * footprint_stride,
                src.data() +
                    3 * (static_cast<size_t>(footprint.y + y) * src_size.width +
                         footprint.x),
                footprint_stride);
  }
  stoker::ResampleSource source;
  source.pixels = held.data();
  source.stride = static_cast<int>(footprint_stride);
  source.size = src_size;
  source.available = footprint;
  source.order = order;
  stoker::PillowResample(source, b, out_size, window, filter, out.data(),
                         3 * window.width, scratch, kernels);
  std::ofstream(out_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()),
             static_cast<std::streamsize>(out.size()));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  stoker::ResampleKernels kernels = stoker::ResampleKernels::kBest;
  stoker::PassOrder order = stoker::PassOrder::kShrinkVerticalFirst;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    int major = 0, minor = 0;
    if (arg == "--portable") {
      kernels = stoker::ResampleKernels::kPortable;
    } else if (std::sscanf(arg.c_str(), "--pillow=%d.%d", &major, &minor) ==
               2) {
      order = stoker::PillowPassOrder(major, minor);
    } else {
      argc = 0;
    }
  }
  if (argc < 2) {
    std::cerr
        << "usage: pillow_resample_tool CASES [--portable] [--pillow=X.Y]\n";
    return 2;
  }
  std::ifstream cases(argv[1]);
  stoker::ResampleScratch scratch;
  for (std::string line; std::getline(cases, line);) {
    if (!line.empty() && !RunCase(line, kernels, order, &scratch)) return 1;
  }
  return 0;
}
