// dump_batches: the first batches of a job as the C++ SDK reads them, written
// raw to a file: for each batch its images bytes, then its labels (int64).
// The Python tests compare the Python package's tensors with it.
//
//   dump_batches --socket=S --dataset=D --batches=3 --out=F [--pipeline=train]
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "common/cli.h"
#include "stoker/client.h"

ABSL_FLAG(std::string, socket, "", "the daemon's socket");
ABSL_FLAG(std::string, dataset, "", "ImageFolder root");
ABSL_FLAG(std::string, out, "", "file to write");
ABSL_FLAG(int, batches, 2, "batches to write");
ABSL_FLAG(int, batch_size, 8, "samples per batch");
ABSL_FLAG(int, size, 64, "output side");
ABSL_FLAG(std::string, pipeline, "train",
          "train (RandomResizedCrop + flip) "
          "or eval (Resize(size * 8 / 7) + CenterCrop)");
ABSL_FLAG(std::string, dtype, "uint8", "uint8, float32 or float16");
ABSL_FLAG(std::string, layout, "NHWC", "NHWC or NCHW");
ABSL_FLAG(bool, normalize, false, "append Normalize (ImageNet statistics)");
ABSL_FLAG(bool, jitter, false, "append ColorJitter(0.4, 0.4, 0.4)");
ABSL_FLAG(uint64_t, seed, 0, "job seed");
ABSL_FLAG(std::string, reference_pillow, "",
          "the Pillow version to match (empty: the newest)");
ABSL_FLAG(std::string, reference_numpy, "",
          "the numpy version to match (empty: the newest)");

int main(int argc, char** argv) {
  stoker::ParseCommandLine(argc, argv,
                           "dump_batches --socket=S --dataset=D "
                           "--out=F [--batches=2] ...");
  stoker::JobSpec spec;
  spec.dataset_path = absl::GetFlag(FLAGS_dataset);
  spec.batch_size = absl::GetFlag(FLAGS_batch_size);
  spec.seed = absl::GetFlag(FLAGS_seed);
  spec.reference_pillow = absl::GetFlag(FLAGS_reference_pillow);
  spec.reference_numpy = absl::GetFlag(FLAGS_reference_numpy);
  spec.epochs = 0;
  const uint32_t size = absl::GetFlag(FLAGS_size);
  spec.height = spec.width = size;
  spec.pipeline = absl::GetFlag(FLAGS_pipeline) == "eval"
                      ? stoker::EvalPipeline(size * 8 / 7, size)
                      : stoker::TrainPipeline(size);
  if (absl::GetFlag(FLAGS_jitter))
    spec.pipeline.push_back(stoker::ColorJitter{});
  if (absl::GetFlag(FLAGS_normalize))
    spec.pipeline.push_back(stoker::Normalize{});
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  spec.dtype = dtype == "float32"   ? stoker::DType::kFloat32
               : dtype == "float16" ? stoker::DType::kFloat16
                                    : stoker::DType::kUInt8;
  spec.layout = absl::GetFlag(FLAGS_layout) == "NCHW" ? stoker::Layout::kNCHW
                                                      : stoker::Layout::kNHWC;
  auto client = stoker::Client::Connect(absl::GetFlag(FLAGS_socket));
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  auto job = (*client)->CreateJob(spec);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.status().ToString().c_str());
    return 1;
  }
  auto consumer = (*client)->Attach(job->id);
  if (!consumer.ok()) {
    std::fprintf(stderr, "%s\n", consumer.status().ToString().c_str());
    return 1;
  }
  std::FILE* out = std::fopen(absl::GetFlag(FLAGS_out).c_str(), "wb");
  for (int i = 0; out != nullptr && i < absl::GetFlag(FLAGS_batches); ++i) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) {
      std::fprintf(stderr, "%s\n", batch.status().ToString().c_str());
      return 1;
    }
    const auto images = batch->image_tensor();
    std::fwrite(images.data, 1, images.bytes, out);
    std::fwrite(batch->labels().data(), sizeof(int64_t), batch->size(), out);
  }
  if (out == nullptr || std::fclose(out) != 0) return 1;
  consumer->reset();
  return (*client)->DeleteJob(job->id).ok() ? 0 : 1;
}
