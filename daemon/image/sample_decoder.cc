#include "daemon/image/sample_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon/image/mask_geometry.h"
#include "libyuv/planar_functions.h"
#include "libyuv/scale.h"

namespace stoker {

uint8_t* ResampleToPlanes(const uint8_t* src, int stride, ImageSize src_size,
                          ImageSize dst_size, Interpolation interpolation,
                          std::vector<uint8_t>* scratch) {
  const size_t src_plane = src_size.Pixels();
  const size_t dst_plane = dst_size.Pixels();
  // Source planes, destination planes, one spare plane for flipping.
  scratch->resize(3 * src_plane + 4 * dst_plane);
  uint8_t* s = scratch->data();
  uint8_t* d = s + 3 * src_plane;
  libyuv::SplitRGBPlane(src, stride, s, src_size.width, s + src_plane,
                        src_size.width, s + 2 * src_plane, src_size.width,
                        src_size.width, src_size.height);
  const bool shrinking =
      dst_size.width < src_size.width || dst_size.height < src_size.height;
  const libyuv::FilterMode filter = interpolation == Interpolation::kNearest
                                        ? libyuv::kFilterNone
                                    : shrinking ? libyuv::kFilterBox
                                                : libyuv::kFilterBilinear;
  for (int c = 0; c < 3; ++c) {
    libyuv::ScalePlane(s + c * src_plane, src_size.width, src_size.width,
                       src_size.height, d + c * dst_plane, dst_size.width,
                       dst_size.width, dst_size.height, filter);
  }
  return d;
}

uint16_t FloatToHalf(float value) {
  // IEEE binary16, round to nearest even; no NaN can occur here.
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint32_t sign = (bits >> 16) & 0x8000;
  const float magnitude = std::fabs(value);
  if (magnitude >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);
  if (magnitude < 6.103515625e-05f) {  // subnormal half
    return static_cast<uint16_t>(
        sign | static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f)));
  }
  std::memcpy(&bits, &magnitude, 4);
  uint32_t mantissa = bits & 0x7fffff;
  uint32_t exponent = (bits >> 23) - 112;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(sign | half);
}

void BuildValueTable(const Pipeline& pipeline, ValueTable* table) {
  // torch's float32 arithmetic: v1 divides by 255; v2 multiplies by the
  // Python scalar 1/255, which torch rounds to float32 first.
  const float reciprocal = static_cast<float>(1.0 / 255.0);
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x = pipeline.scale_reciprocal ? float(v) * reciprocal : v / 255.0f;
      if (pipeline.normalize) x = (x - pipeline.mean[c]) / pipeline.std[c];
      table->f32[c][v] = x;
      table->f16[c][v] = FloatToHalf(x);
    }
  }
}

bool SampleDecoder::TrimScratch(size_t held_elsewhere) {
  if (scratch_bytes() + held_elsewhere <= max_scratch_bytes_) return false;
  std::vector<uint8_t>().swap(region_);
  std::vector<uint8_t>().swap(planes_);
  std::vector<uint8_t>().swap(packed_);
  std::vector<uint8_t>().swap(resample_.pass);
  std::vector<uint8_t>().swap(augment_);
  std::vector<uint8_t>().swap(crop_);
  std::vector<float>().swap(blur_);
  std::vector<uint8_t>().swap(mask_);
  augmix_ = AugMixScratch();
  return true;
}

namespace {

// Whether a sample is resampled as Pillow would: unless fast_resample asks
// otherwise; a random crop always (it pads and crops after the resize).
bool PlansExactly(const Pipeline& p) {
  return !p.fast_resample || p.geometry == Pipeline::Geometry::kRandomCrop;
}

}  // namespace

absl::Status SampleDecoder::ProcessBytes(std::span<const uint8_t> file,
                                         const Pipeline& pipeline, uint64_t key,
                                         uint8_t* out) {
  DecodedRegion region;
  std::optional<ExactGeometry> exact;
  const bool random_crop = pipeline.geometry == Pipeline::Geometry::kRandomCrop;
  Region decoded;  // the part of the image decoded (at full scale, or
                   // the sample's box scaled for the fast path)
  auto plan = [&](const ImageSize& size) {
    image_ = size;
    params_ = DrawSampleParams(pipeline, size, key);
    if (random_crop && !ResizesBeforeCrop(pipeline)) {
      decoded = DecodeWindow(params_.crop.touched, size);
      return RegionRequest{decoded, {decoded.width, decoded.height}};
    }
    if (PlansExactly(pipeline)) {
      exact = PlanExactGeometry(pipeline, size, params_, &resample_);
    }
    if (!exact) {
      decoded = params_.box;
      return RegionRequest{params_.box, pipeline.output};
    }
    // Exactly the pixels Pillow would read, at full scale.
    decoded = exact->decode;
    return RegionRequest{decoded, {decoded.width, decoded.height}};
  };
  decoder_.set_palette_tail_black(pipeline.palette_tail_black);
  const absl::Status status =
      decoder_.DecodeRegion(file, plan, &region_, &region);
  if (!status.ok()) return status;
  return Render(region, decoded, exact, pipeline, out);
}

absl::Status SampleDecoder::ProcessMask(std::span<const uint8_t> file,
                                        const Pipeline& pipeline, uint8_t fill,
                                        bool tensor, uint8_t* out) {
  ImageSize size;
  if (absl::Status s = decoder_.DecodeMask(file, &mask_, &size); !s.ok()) {
    return s;
  }
  if (size.width != image_.width || size.height != image_.height) {
    return absl::InvalidArgumentError(
        absl::StrCat("the mask is ", size.width, "x", size.height,
                     " (width x height), its "
                     "image ",
                     image_.width, "x", image_.height,
                     "; a mask must be its "
                     "image's size"));
  }
  return RenderMask(mask_.data(), size, pipeline, params_, fill, tensor, out,
                    &augment_);
}

absl::Status SampleDecoder::ProcessViews(std::span<const uint8_t> file,
                                         std::span<const Pipeline> views,
                                         uint64_t key,
                                         std::span<uint8_t* const> outs) {
  // The whole image at full scale, once: every view's pixels are in it.
  DecodedRegion region;
  Region all;
  auto plan = [&](const ImageSize& size) {
    all = {0, 0, size.width, size.height};
    return RegionRequest{all, size};
  };
  decoder_.set_palette_tail_black(views[0].palette_tail_black);
  const absl::Status status =
      decoder_.DecodeRegion(file, plan, &region_, &region);
  if (!status.ok()) return status;
  const ImageSize image{all.width, all.height};
  for (size_t v = 0; v < views.size(); ++v) {
    const Pipeline& p = views[v];
    params_ = DrawSampleParams(p, image, ViewKey(key, uint32_t(v)));
    std::optional<ExactGeometry> exact;
    if (PlansExactly(p) && !(p.geometry == Pipeline::Geometry::kRandomCrop &&
                             !ResizesBeforeCrop(p))) {
      exact = PlanExactGeometry(p, image, params_, &resample_);
    }
    if (absl::Status s = Render(region, all, exact, p, outs[v]); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SampleDecoder::Render(const DecodedRegion& region,
                                   const Region& decoded,
                                   const std::optional<ExactGeometry>& exact,
                                   const Pipeline& pipeline, uint8_t* out) {
  uint8_t* planes = nullptr;
  if (pipeline.geometry == Pipeline::Geometry::kRandomCrop) {
    absl::StatusOr<uint8_t*> cropped =
        RandomCrop(region, exact, decoded, pipeline);
    if (!cropped.ok()) return cropped.status();
    planes = *cropped;
  } else if (exact && FlipIsTheOnlyImageOp(pipeline)) {
    const uint8_t* packed =
        ResamplePacked(region, decoded, *exact, pipeline.output);
    if (packed == nullptr) {
      return absl::InternalError("the decoder returned another region");
    }
    WritePackedOutput(packed, params_.flip, pipeline, Values(pipeline), out,
                      &planes_);
    ApplyErasing(pipeline.erasing, params_.erasing, pipeline.output,
                 pipeline.dtype, pipeline.layout, out);
    return absl::OkStatus();
  } else if (exact) {
    planes = ResampleExactly(region, decoded, *exact, pipeline.output);
  } else if (decoded == params_.box) {  // decoded for this sample alone
    planes =
        ResampleToPlanes(region.data, region.stride, region.size,
                         pipeline.output, pipeline.interpolation, &planes_);
  } else {
    // The whole image decoded (views): the box within it. A centre crop
    // larger than its resize reaches past the edges; the single path's
    // decode clamps it so.
    const Region box =
        ClampRegion(params_.box, {decoded.width, decoded.height});
    if (const uint8_t* at = Within(region, decoded, box)) {
      planes =
          ResampleToPlanes(at, region.stride, {box.width, box.height},
                           pipeline.output, pipeline.interpolation, &planes_);
    }
  }
  if (planes == nullptr) {
    return absl::InternalError("the decoder returned another region");
  }
  ApplyImageOps(pipeline, params_, planes);
  WriteOutput(planes, pipeline, out);
  ApplyErasing(pipeline.erasing, params_.erasing, pipeline.output,
               pipeline.dtype, pipeline.layout, out);
  return absl::OkStatus();
}

const uint8_t* SampleDecoder::Within(const DecodedRegion& region,
                                     const Region& decoded,
                                     const Region& part) {
  const bool inside = part.x >= decoded.x && part.y >= decoded.y &&
                      part.x + part.width <= decoded.x + decoded.width &&
                      part.y + part.height <= decoded.y + decoded.height;
  if (region.scale_denom != 1 || region.size.width != decoded.width ||
      region.size.height != decoded.height || !inside) {
    return nullptr;
  }
  return region.data + size_t(part.y - decoded.y) * region.stride +
         size_t(part.x - decoded.x) * 3;
}

absl::StatusOr<uint8_t*> SampleDecoder::RandomCrop(
    const DecodedRegion& region, const std::optional<ExactGeometry>& g,
    const Region& decoded, const Pipeline& pipeline) {
  const CropParams& c = params_.crop;
  if (c.too_large) {
    return absl::InvalidArgumentError(
        absl::StrCat("random_crop: the image would be ", c.padded.height, "x",
                     c.padded.width, " before the crop, above ", kMaxCropStage,
                     " on a side"));
  }
  if (!c.fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_crop: the image, padded, is ", c.padded.height, "x",
        c.padded.width, ", smaller than the crop ", pipeline.output.height, "x",
        pipeline.output.width, " (pad_if_needed pads it)"));
  }
  const Region& t = c.touched;
  const uint8_t* touched = nullptr;
  if (g) {
    touched = ResampleExactly(region, decoded, *g, {t.width, t.height});
  } else if (const uint8_t* at = Within(region, decoded, t)) {
    const size_t n = size_t(t.width) * t.height;
    planes_.resize(3 * n);
    libyuv::SplitRGBPlane(at, region.stride, planes_.data(), t.width,
                          planes_.data() + n, t.width, planes_.data() + 2 * n,
                          t.width, t.width, t.height);
    touched = planes_.data();
  }
  if (touched == nullptr) {
    return absl::InternalError("the decoder returned another region");
  }
  crop_.resize(4 * pipeline.output.Pixels());  // and a spare plane
  ApplyRandomCrop(pipeline.crop, params_.crop_maps, t, touched, pipeline.output,
                  crop_.data());
  return crop_.data();
}

const uint8_t* SampleDecoder::ResamplePacked(const DecodedRegion& region,
                                             const Region& decoded,
                                             const ExactGeometry& g,
                                             ImageSize out) {
  const uint8_t* pixels = Within(region, decoded, g.decode);
  if (pixels == nullptr) return nullptr;
  ResampleSource source;
  source.pixels = pixels;
  source.stride = region.stride;
  source.size = {g.image.width, g.image.height};
  source.available = {g.decode.x - g.image.x, g.decode.y - g.image.y,
                      g.decode.width, g.decode.height};
  source.order = g.order;
  packed_.resize(3 * out.Pixels());
  PillowResample(source, g.box, g.resized, g.window, g.filter, packed_.data(),
                 3 * out.width, &resample_);
  return packed_.data();
}

uint8_t* SampleDecoder::ResampleExactly(const DecodedRegion& region,
                                        const Region& decoded,
                                        const ExactGeometry& g, ImageSize out) {
  const uint8_t* packed = ResamplePacked(region, decoded, g, out);
  if (packed == nullptr) return nullptr;
  const size_t n = out.Pixels();
  planes_.resize(4 * n);  // R, G, B and a spare plane for flipping
  uint8_t* planes = planes_.data();
  libyuv::SplitRGBPlane(packed, 3 * out.width, planes, out.width, planes + n,
                        out.width, planes + 2 * n, out.width, out.width,
                        out.height);
  return planes;
}

void SampleDecoder::WriteOutput(const uint8_t* planes, const Pipeline& p,
                                uint8_t* out) {
  const ImageSize o = p.output;
  const size_t n = o.Pixels();
  if (p.dtype == DType::kUInt8) {
    if (p.layout == Layout::kNCHW) {
      std::memcpy(out, planes, 3 * n);
    } else {
      libyuv::MergeRGBPlane(planes, o.width, planes + n, o.width,
                            planes + 2 * n, o.width, out, o.width * 3, o.width,
                            o.height);
    }
    return;
  }
  const ValueTable& table = Values(p);
  const bool nchw = p.layout == Layout::kNCHW;
  // out index of channel c, pixel i.
  auto at = [&](int c, size_t i) { return nchw ? c * n + i : i * 3 + c; };
  if (p.dtype == DType::kFloat32) {
    auto* f = reinterpret_cast<float*>(out);
    for (int c = 0; c < 3; ++c) {
      const float* lut = table.f32[c];
      const uint8_t* plane = planes + c * n;
      for (size_t i = 0; i < n; ++i) f[at(c, i)] = lut[plane[i]];
    }
  } else {
    auto* h = reinterpret_cast<uint16_t*>(out);
    for (int c = 0; c < 3; ++c) {
      const uint16_t* lut = table.f16[c];
      const uint8_t* plane = planes + c * n;
      for (size_t i = 0; i < n; ++i) h[at(c, i)] = lut[plane[i]];
    }
  }
}

const ValueTable& SampleDecoder::Values(const Pipeline& p) {
  if (!table_valid_ || table_normalize_ != p.normalize ||
      table_reciprocal_ != p.scale_reciprocal || table_mean_ != p.mean ||
      table_std_ != p.std) {
    BuildValueTable(p, &table_);
    table_valid_ = true;
    table_normalize_ = p.normalize;
    table_reciprocal_ = p.scale_reciprocal;
    table_mean_ = p.mean;
    table_std_ = p.std;
  }
  return table_;
}

absl::Status SampleDecoder::DecodeTo(std::span<const uint8_t> file,
                                     ImageSize out_size, uint8_t* out) {
  Pipeline resize;
  resize.output = resize.resized = out_size;
  absl::Status status = ProcessBytes(file, resize, 0, out);
  TrimScratch();
  return status;
}

}  // namespace stoker
