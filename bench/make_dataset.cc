// make_dataset: writes a deterministic synthetic ImageFolder of JPEGs.
//
//   make_dataset --out=/tmp/data --classes=8 --per_class=64
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "bench/support/dataset_gen.h"
#include "common/cli.h"

ABSL_FLAG(std::string, out, "", "root directory to create");
ABSL_FLAG(int, classes, 8, "number of classes");
ABSL_FLAG(int, per_class, 64, "images per class");
ABSL_FLAG(int, width, 500, "nominal image width");
ABSL_FLAG(int, height, 375, "nominal image height");
ABSL_FLAG(bool, vary_size, true, "vary each image's sides by up to -20%");
ABSL_FLAG(int, quality, 90, "JPEG quality");
ABSL_FLAG(uint64_t, seed, 1, "generator seed");
ABSL_FLAG(bool, smooth, false, "no grain or fine texture (resampler tests)");

int main(int argc, char** argv) {
  stoker::ParseCommandLine(
      argc, argv,
      "make_dataset --out=DIR [--classes=8] [--per_class=64] ...\n\n"
      "Writes a deterministic synthetic ImageFolder of JPEGs.");
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) {
    std::fprintf(stderr, "make_dataset: --out is required\n");
    return 2;
  }
  auto dataset = stoker::testdata::GenerateImageFolder(
      out, {.classes = absl::GetFlag(FLAGS_classes),
            .images_per_class = absl::GetFlag(FLAGS_per_class),
            .width = absl::GetFlag(FLAGS_width),
            .height = absl::GetFlag(FLAGS_height),
            .vary_size = absl::GetFlag(FLAGS_vary_size),
            .quality = absl::GetFlag(FLAGS_quality),
            .seed = absl::GetFlag(FLAGS_seed),
            .smooth = absl::GetFlag(FLAGS_smooth)});
  if (!dataset.ok()) {
    std::fprintf(stderr, "make_dataset: %s\n",
                 dataset.status().ToString().c_str());
    return 1;
  }
  std::printf("wrote %zu JPEGs in %zu classes to %s (%.1f MB, mean %.0f KB)\n",
              dataset->paths.size(), dataset->class_names.size(), out.c_str(),
              dataset->total_bytes / 1e6,
              dataset->total_bytes / 1e3 / dataset->paths.size());
  return 0;
}
