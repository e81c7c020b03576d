// The CUDA copy path. On a machine without a GPU the copy tests skip; what
// must hold there is checked: the SDK says clearly that there is no GPU and
// the CPU path keeps working.
#include "stoker/cuda.h"

#include <dlfcn.h>

#include <vector>

#include "gtest/gtest.h"
#include "tests/test_util.h"

#ifdef STOKER_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace stoker {
namespace {

bool HaveGpu() {
#ifdef STOKER_HAVE_CUDA
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
#else
  return false;
#endif
}

bool DriverInstalled() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) ::dlclose(driver);
  return driver != nullptr;
}

class CudaTest : public ::testing::Test {
 protected:
  CudaTest() {
    data_ = testing::MakeDataset(daemon_.dir() + "/data", 2, 8, 32, 24,
                                 /*vary_size=*/false);
  }
  JobSpec Spec() {
    return {.dataset_path = daemon_.dir() + "/data",
            .batch_size = 4,
            .slots = 2,
            .height = 24,
            .width = 32,
            .epochs = 2};
  }

  testing::TestDaemon daemon_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
  testdata::GeneratedDataset data_;
};

TEST_F(CudaTest, WithoutAGpuCreateSaysSoAndTheCpuPathWorks) {
  if (HaveGpu()) GTEST_SKIP() << "a CUDA device is present";
  auto job = client_->CreateJob(Spec());
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  auto copier = CudaCopier::Create(**consumer);
  ASSERT_FALSE(copier.ok());
  EXPECT_EQ(copier.status().code(), CudaCopier::Available()
                                        ? absl::StatusCode::kFailedPrecondition
                                        : absl::StatusCode::kUnimplemented);
  EXPECT_NE(copier.status().message().find("CPU"), absl::string_view::npos)
      << copier.status();
  // The cause in words: never the runtime's "driver version is
  // insufficient", which invites a driver upgrade on a machine with none.
  EXPECT_EQ(copier.status().message().find("insufficient"),
            absl::string_view::npos)
      << copier.status();
  if (CudaCopier::Available() && !DriverInstalled()) {
    EXPECT_NE(copier.status().message().find("no NVIDIA driver or GPU"),
              absl::string_view::npos)
        << copier.status();
  }
  size_t samples = 0;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) break;
    samples += batch->size();
  }
  EXPECT_EQ(samples, 32u);
}

TEST_F(CudaTest, CopiesEveryBatchToTheDeviceAndReleasesAfterTheCopy) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
#ifdef STOKER_HAVE_CUDA
  auto job = client_->CreateJob(Spec());
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  auto copier = CudaCopier::Create(**consumer);
  ASSERT_TRUE(copier.ok()) << copier.status();
  const size_t image_bytes = 24 * 32 * 3;
  const size_t batches = 8;
  uint8_t* d_images = nullptr;
  int64_t* d_labels = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_images),
                       batches * 4 * image_bytes),
            cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_labels),
                       batches * 4 * sizeof(int64_t)),
            cudaSuccess);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::vector<std::vector<int64_t>> indices;
  // Two slots, eight batches: this only finishes if the SDK releases each
  // slot after its copy.
  for (size_t b = 0; b < batches; ++b) {
    auto batch = (*consumer)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
    indices.emplace_back(batch->indices().begin(), batch->indices().end());
    ASSERT_TRUE((*copier)
                    ->CopyAsync(*std::move(batch),
                                d_images + b * 4 * image_bytes,
                                d_labels + b * 4, stream)
                    .ok());
  }
  EXPECT_TRUE((*copier)->Drain().ok());
  std::vector<uint8_t> images(batches * 4 * image_bytes);
  std::vector<int64_t> labels(batches * 4);
  cudaMemcpy(images.data(), d_images, images.size(), cudaMemcpyDeviceToHost);
  cudaMemcpy(labels.data(), d_labels, labels.size() * 8,
             cudaMemcpyDeviceToHost);
  for (size_t b = 0; b < batches; ++b) {
    for (size_t r = 0; r < 4; ++r) {
      const int64_t index = indices[b][r];
      EXPECT_EQ(labels[b * 4 + r], data_.labels[index]);
      const auto reference = testing::ReferenceDecode(data_.paths[index]);
      EXPECT_EQ(0, memcmp(images.data() + (b * 4 + r) * image_bytes,
                          reference.pixels.data(), image_bytes));
    }
  }
  cudaStreamDestroy(stream);
  cudaFree(d_images);
  cudaFree(d_labels);
#endif
}

}  // namespace
}  // namespace stoker
