// stoker's automatic augmentation, for tests/python/test_augment.py to
// compare with torchvision itself:
//   augment_tool op IN OUT WIDTH HEIGHT OP MAGNITUDE nearest|bilinear|bicubic
//       R G B
//       applies one op (torchvision's name) to each image of a file of
//       packed RGB images of WIDTH x HEIGHT, back to back;
//   augment_tool tensor_op IN OUT WIDTH HEIGHT OP MAGNITUDE nearest|bilinear
//       R G B
//       the same through torchvision's tensor path (AugMix's); R = -1: no
//       fill (fill=None);
//   augment_tool draws SPEC_JSON WIDTH HEIGHT SEED EPOCH FIRST COUNT [VIEW]
//       prints, one JSON line per sample index, the ops, the erasing box,
//       the crop box, a random crop's place (top, left, the size it pads,
//       padded), RandomResize's shorter side, the flips, the jitter,
//       grayscale, blur and solarize
//       that sample (its view VIEW of JobSpec.views) draws in a job of that
//       JobSpec (JSON: one pipeline) over images of WIDTH x HEIGHT;
//   augment_tool tables SPEC_JSON
//       prints the magnitude table of each op of the spec's augmentation
//       at its output size, as JSON.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/image/auto_augment.h"
#include "daemon/image/pipeline.h"
#include "daemon/image/tensor_ops.h"
#include "daemon/spec/pipeline_proto.h"
#include "google/protobuf/util/json_util.h"

namespace stoker {
namespace {

std::vector<uint8_t> ToPlanes(const uint8_t* packed, size_t n) {
  std::vector<uint8_t> planes(3 * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t c = 0; c < 3; ++c) planes[c * n + i] = packed[3 * i + c];
  }
  return planes;
}

int RunOp(char** argv, bool timed, bool tensor) {
  std::ifstream file(argv[2], std::ios::binary);
  const std::vector<uint8_t> packed((std::istreambuf_iterator<char>(file)),
                                    std::istreambuf_iterator<char>());
  const ImageSize size{std::atoi(argv[4]), std::atoi(argv[5])};
  const size_t bytes = 3 * size.Pixels();
  if (bytes == 0 || packed.empty() || packed.size() % bytes != 0) {
    std::cerr << argv[2] << ": not " << size.width << "x" << size.height
              << " packed RGB images\n";
    return 1;
  }
  const std::optional<AugmentOp> op = AugmentOpByName(argv[6]);
  if (!op) {
    std::cerr << "unknown op " << argv[6] << "\n";
    return 2;
  }
  AugmentStyle style;
  const std::string filter = argv[8];
  style.interpolation = filter == "bilinear"  ? Interpolation::kBilinear
                        : filter == "bicubic" ? Interpolation::kBicubic
                                              : Interpolation::kNearest;
  for (int c = 0; c < 3; ++c) style.fill[c] = uint8_t(std::atoi(argv[9 + c]));
  TensorStyle tensor_style;
  tensor_style.interpolation = style.interpolation;
  if (std::atoi(argv[9]) >= 0) tensor_style.fill = style.fill;
  const double magnitude = std::strtod(argv[7], nullptr);
  std::vector<uint8_t> out(packed.size()), planes, scratch;
  const size_t n = size.Pixels();
  // A 13th argument R times the op alone, R times over every image, and
  // prints milliseconds per image (bench/bench_recipe.py).
  const int repeats = timed ? std::atoi(argv[12]) : 1;
  std::chrono::steady_clock::duration spent{};
  for (size_t at = 0; at < packed.size(); at += bytes) {
    for (int r = 0; r < repeats; ++r) {
      planes = ToPlanes(&packed[at], n);
      const auto start = std::chrono::steady_clock::now();
      if (tensor) {
        ApplyTensorOp(*op, magnitude, tensor_style, size, planes.data(),
                      &scratch);
      } else {
        ApplyAugmentOp(*op, magnitude, style, size, planes.data(), &scratch);
      }
      spent += std::chrono::steady_clock::now() - start;
    }
    for (size_t i = 0; i < n; ++i) {
      for (size_t c = 0; c < 3; ++c) out[at + 3 * i + c] = planes[c * n + i];
    }
  }
  std::ofstream(argv[3], std::ios::binary)
      .write(reinterpret_cast<const char*>(out.data()),
             static_cast<std::streamsize>(out.size()));
  if (timed) {
    const double images = double(packed.size() / bytes) * repeats;
    std::printf(
        "%.6f\n",
        std::chrono::duration<double, std::milli>(spent).count() / images);
  }
  return 0;
}

absl::StatusOr<Pipeline> ParseSpec(const char* json) {
  v1::JobSpec spec;
  if (!google::protobuf::util::JsonStringToMessage(json, &spec).ok()) {
    return absl::InvalidArgumentError("not a JobSpec in JSON");
  }
  return ParsePipeline(spec);
}

int RunDraws(char** argv) {
  absl::StatusOr<Pipeline> pipeline = ParseSpec(argv[2]);
  if (!pipeline.ok()) {
    std::cerr << pipeline.status() << "\n";
    return 1;
  }
  const ImageSize image{std::atoi(argv[3]), std::atoi(argv[4])};
  const uint64_t seed = std::strtoull(argv[5], nullptr, 10);
  const uint64_t epoch = std::strtoull(argv[6], nullptr, 10);
  const uint64_t first = std::strtoull(argv[7], nullptr, 10);
  const uint64_t count = std::strtoull(argv[8], nullptr, 10);
  const uint32_t view = argv[9] ? uint32_t(std::atoi(argv[9])) : 0;
  for (uint64_t i = first; i < first + count; ++i) {
    const SampleParams params = DrawSampleParams(
        *pipeline, image, ViewKey(SampleKey(seed, epoch, i), view));
    std::printf("{\"index\": %llu, \"ops\": [", (unsigned long long)i);
    for (int k = 0; k < params.augment.count; ++k) {
      const DrawnOp& op = params.augment.ops[k];
      std::printf("%s[\"%s\", %.17g]", k ? ", " : "",
                  std::string(AugmentOpName(op.op)).c_str(), op.magnitude);
    }
    const WarpParams& w = params.warp;
    std::printf("], \"warp\": [%.17g, %d, %d, %.17g, %.17g, %.17g]", w.angle,
                w.tx, w.ty, w.scale, w.shear_x, w.shear_y);
    const DrawnAugMix& mix = params.augmix;
    std::printf(", \"augmix\": {\"original\": %.9g, \"weights\": [",
                double(mix.original));
    for (size_t c = 0; c < mix.weights.size(); ++c) {
      std::printf("%s%.9g", c ? ", " : "", double(mix.weights[c]));
    }
    std::printf("], \"chains\": [");
    for (size_t c = 0; c < mix.chains.size(); ++c) {
      std::printf("%s[", c ? ", " : "");
      for (int k = 0; k < mix.chains[c].count; ++k) {
        const DrawnOp& op = mix.chains[c].ops[k];
        std::printf("%s[\"%s\", %.17g]", k ? ", " : "",
                    std::string(AugmentOpName(op.op)).c_str(), op.magnitude);
      }
      std::printf("]");
    }
    std::printf("]}");
    std::printf(", \"blur\": %.9g",
                params.blur.apply ? params.blur.sigma : 0.0);
    const JitterParams& j = params.jitter;
    std::printf(
        ", \"jitter\": {\"applies\": %s, \"order\": [%d, %d, %d, %d], "
        "\"factors\": [%.9g, %.9g, %.9g], \"hue\": %d}",
        params.jitter_applies && pipeline->jitter() ? "true" : "false",
        j.order[0], j.order[1], j.order[2], j.order[3], double(j.brightness),
        double(j.contrast), double(j.saturation), j.hue ? j.hue_shift : -1);
    std::printf(", \"gray\": %s, \"solarize\": %s, \"vflip\": %s",
                params.gray ? "true" : "false",
                params.solarize ? "true" : "false",
                params.vflip ? "true" : "false");
    std::printf(", \"box\": [%d, %d, %d, %d], \"flip\": %s", params.box.x,
                params.box.y, params.box.width, params.box.height,
                params.flip ? "true" : "false");
    const CropParams& c = params.crop;
    std::printf(", \"crop\": [%d, %d, %d, %d, %d, %d], \"side\": %d", c.top,
                c.left, c.stage.width, c.stage.height, c.padded.width,
                c.padded.height, params.shorter_side);
    std::printf(", \"erase\": ");
    const ErasingParams& e = params.erasing;
    if (e.apply) {
      std::printf("[%d, %d, %d, %d]}\n", e.box.x, e.box.y, e.box.width,
                  e.box.height);
    } else {
      std::printf("null}\n");
    }
  }
  return 0;
}

int RunTables(char** argv) {
  absl::StatusOr<Pipeline> pipeline = ParseSpec(argv[2]);
  if (!pipeline.ok()) {
    std::cerr << pipeline.status() << "\n";
    return 1;
  }
  const AutoAugmentSpec& spec = pipeline->augment;
  std::printf("{");
  bool first = true;
  for (AugmentOp op : AugmentationSpace(spec)) {
    bool is_signed = false;
    const std::vector<float> table =
        MagnitudeTable(spec, op, pipeline->output, &is_signed);
    std::printf("%s\"%s\": [[", first ? "" : ", ",
                std::string(AugmentOpName(op)).c_str());
    for (size_t i = 0; i < table.size(); ++i) {
      std::printf("%s%.9g", i ? ", " : "", double(table[i]));
    }
    std::printf("], %s]", is_signed ? "true" : "false");
    first = false;
  }
  std::printf("}\n");
  return 0;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "op" && (argc == 12 || argc == 13)) {
    return stoker::RunOp(argv, argc == 13, false);
  }
  if (mode == "tensor_op" && argc == 12) {
    return stoker::RunOp(argv, false, true);
  }
  if (mode == "draws" && (argc == 9 || argc == 10)) {
    return stoker::RunDraws(argv);
  }
  if (mode == "tables" && argc == 3) return stoker::RunTables(argv);
  std::cerr << "usage: see the head of augment_tool.cc\n";
  return 2;
}
