// Deterministic synthetic ImageFolder datasets for the demo, tests and
// benchmarks: JPEGs with photo-like statistics (smooth gradients, shapes,
// multi-scale texture and sensor-like noise) so that file sizes and decode
// costs resemble real photographs. Same options, same bytes, on any machine.
#ifndef STOKER_BENCH_SUPPORT_DATASET_GEN_H_
#define STOKER_BENCH_SUPPORT_DATASET_GEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace stoker::testdata {

struct DatasetOptions {
  int classes = 4;
  int images_per_class = 32;
  int width = 500;  // nominal size; see vary_size
  int height = 375;
  bool vary_size = true;  // each image 80%..100% of the nominal sides
  int quality = 90;
  uint64_t seed = 1;
  // Gradients and shapes only, no grain or fine texture: for tests that
  // compare resamplers, where per-pixel noise would drown the signal.
  bool smooth = false;
};

struct GeneratedDataset {
  std::vector<std::string> class_names;
  std::vector<std::string> paths;  // in ImageFolder order
  std::vector<int64_t> labels;
  uint64_t total_bytes = 0;
};

// Class i is named "class_%03d"; image j of it "img_%05d.jpg".
absl::StatusOr<GeneratedDataset> GenerateImageFolder(
    const std::string& root, const DatasetOptions& options);

// RGB pixels (width * height * 3) of one synthetic photo.
std::vector<uint8_t> RenderImage(int width, int height, uint64_t seed,
                                 bool smooth = false);

// JPEG-encodes packed pixels (3 channels RGB, or 1 when `grayscale`).
absl::StatusOr<std::vector<uint8_t>> EncodeJpeg(
    const std::vector<uint8_t>& pixels, int width, int height, int quality,
    bool grayscale = false, bool progressive = false);

absl::Status WriteFile(const std::string& path,
                       const std::vector<uint8_t>& bytes);

}  // namespace stoker::testdata

#endif  // STOKER_BENCH_SUPPORT_DATASET_GEN_H_
