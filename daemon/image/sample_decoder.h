// SampleDecoder: the per-sample work of a worker thread. Takes one file's
// bytes (JPEG, PNG, WebP, TIFF, BMP or PPM/PGM, told apart by their first
// bytes: see ImageDecoder; daemon/datasets/ reads them), decodes the part
// of it the
// sample's crop needs, resamples it to the pipeline's output size exactly
// as Pillow would (or, with Pipeline::fast_resample, approximately), flips
// it if drawn, and writes it straight into its row of a ring slot in the
// output dtype and layout.
//
// One per worker thread; owns reusable buffers, so the hot path allocates
// only when an image is larger than any before it; buffers above
// DecodeLimits::max_scratch_bytes in all (with the caller's file buffer)
// are freed after the sample that needed them (TrimScratch: one huge image
// does not pin its memory). Not thread-safe.
#ifndef STOKER_DAEMON_IMAGE_SAMPLE_DECODER_H_
#define STOKER_DAEMON_IMAGE_SAMPLE_DECODER_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/image/exact_geometry.h"
#include "daemon/image/image_decoder.h"
#include "daemon/image/packed_output.h"
#include "daemon/image/pillow_resample.h"
#include "daemon/image/pipeline.h"

namespace stoker {

// The fast path: resamples packed RGB pixels (`stride` bytes per row) to
// three planes of dst_size (R, G, B), each plane area-averaged when shrinking
// and bilinear when enlarging (kNearest: point sampling). libyuv's interleaved
// scalers have no true box filter for non-integer ratios, hence planes. Returns
// the first plane; the others follow, dst_size.Pixels() apart, in *scratch.
uint8_t* ResampleToPlanes(const uint8_t* src, int stride, ImageSize src_size,
                          ImageSize dst_size, Interpolation interpolation,
                          std::vector<uint8_t>* scratch);

// float32 / float16 output: (v / 255 - mean[c]) / std[c] for every byte v,
// as a table per channel (ValueTable, packed_output.h).
void BuildValueTable(const Pipeline& pipeline, ValueTable* table);
uint16_t FloatToHalf(float value);

class SampleDecoder {
 public:
  explicit SampleDecoder(DecodeLimits limits)
      : decoder_(limits), max_scratch_bytes_(limits.max_scratch_bytes) {}

  // Decodes the bytes of one image file through `pipeline` with the random
  // parameters of `key` (see SampleKey), writing pipeline.BytesPerImage()
  // bytes to `out`. Errors say what was wrong with the file (not which).
  absl::Status ProcessBytes(std::span<const uint8_t> file,
                            const Pipeline& pipeline, uint64_t key,
                            uint8_t* out);

  // Decodes the bytes of one image file once, then makes each of `views`
  // of it (JobSpec.views) into outs[v], with the random parameters of
  // ViewKey(key, v).
  absl::Status ProcessViews(std::span<const uint8_t> file,
                            std::span<const Pipeline> views, uint64_t key,
                            std::span<uint8_t* const> outs);

  // The sample's label mask (a PNG of mode P or L) made into `out`
  // (pipeline.output pixels, one byte each) with the geometry the last
  // ProcessBytes drew for its image (see mask_geometry.h), `fill` where
  // padding or a warp uncovers it. A mask of another size than that image
  // fails, saying both sizes.
  // `tensor`: resized as transforms.v2 resizes a mask tensor.
  absl::Status ProcessMask(std::span<const uint8_t> file,
                           const Pipeline& pipeline, uint8_t fill, bool tensor,
                           uint8_t* out);

  // Shorthand: `file` resized to out_size, RGB uint8 NHWC, then
  // TrimScratch().
  absl::Status DecodeTo(std::span<const uint8_t> file, ImageSize out_size,
                        uint8_t* out);

  // Frees the buffers if they and `held_elsewhere` bytes (the caller's file
  // buffer) pass DecodeLimits::max_scratch_bytes; whether it did, so that
  // the caller frees its own too.
  bool TrimScratch(size_t held_elsewhere = 0);

  // Bytes held by the reusable buffers between samples.
  size_t scratch_bytes() const {
    return region_.capacity() + planes_.capacity() + packed_.capacity() +
           resample_.pass.capacity() + augment_.capacity() + crop_.capacity() +
           blur_.capacity() * sizeof(float) + augmix_.bytes() +
           mask_.capacity();
  }

 private:
  // The decoded pixels (`region`, which holds `decoded` of the image) made
  // into one output by `pipeline` with the parameters in params_.
  absl::Status Render(const DecodedRegion& region, const Region& decoded,
                      const std::optional<ExactGeometry>& exact,
                      const Pipeline& pipeline, uint8_t* out);
  // Where `part` of the image starts in `region`, which holds `decoded` of
  // it at full scale; null if it does not hold all of `part`.
  static const uint8_t* Within(const DecodedRegion& region,
                               const Region& decoded, const Region& part);
  void WriteOutput(const uint8_t* planes, const Pipeline& pipeline,
                   uint8_t* out);
  // The pipeline's float values, built again only when they change.
  const ValueTable& Values(const Pipeline& pipeline);
  // The ops on the resampled planes: flips, warp, jitter, grayscale, blur,
  // automatic augmentation, with the parameters drawn for this sample (a
  // RandomChoice runs its drawn option in its stage).
  void ApplyImageOps(const Pipeline& pipeline, const SampleParams& params,
                     uint8_t* planes);
  void ApplyStage(const Pipeline& pipeline, const SampleParams& params,
                  ImageStage stage, uint8_t* planes);
  // A kRandomCrop sample: the pixels its crop reads (resampled exactly,
  // or as decoded in `decoded`), padded and cropped into crop_.
  absl::StatusOr<uint8_t*> RandomCrop(const DecodedRegion& region,
                                      const std::optional<ExactGeometry>& g,
                                      const Region& decoded,
                                      const Pipeline& pipeline);
  // The decoded footprint of `g` resampled as Pillow does, as packed RGB
  // of `out` in packed_ (null if `region` does not hold it).
  const uint8_t* ResamplePacked(const DecodedRegion& region,
                                const Region& decoded, const ExactGeometry& g,
                                ImageSize out);
  // The same as three planes of `out` (and a spare one) in planes_.
  uint8_t* ResampleExactly(const DecodedRegion& region, const Region& decoded,
                           const ExactGeometry& g, ImageSize out);

  ImageDecoder decoder_;
  SampleParams params_;
  ImageSize image_;  // the size of the image params_ were drawn for
  std::vector<uint8_t> region_;
  std::vector<uint8_t> planes_;
  std::vector<uint8_t> packed_;   // the exact resample's RGB output
  std::vector<uint8_t> augment_;  // the automatic augmentation's scratch
  std::vector<uint8_t> crop_;     // a random crop's planes
  std::vector<float> blur_;       // the blur's padded plane
  std::vector<uint8_t> mask_;     // a mask's indices, as decoded
  AugMixScratch augmix_;
  ResampleScratch resample_;
  // The value table and the normalisation it was built for.
  ValueTable table_;
  bool table_valid_ = false;
  bool table_normalize_ = false;
  bool table_reciprocal_ = false;
  std::array<float, 3> table_mean_ = {};
  std::array<float, 3> table_std_ = {};
  const uint64_t max_scratch_bytes_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_IMAGE_SAMPLE_DECODER_H_
