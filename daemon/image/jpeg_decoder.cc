#include "daemon/image/jpeg_decoder.h"

// clang-format off
#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace stoker {

// libjpeg reports errors through a callback that must not return: it longjmps
// back into DecodeRegion(). Nothing with a destructor may live across setjmp
// there.
struct JpegDecoder::State {
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr err;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool warned = false;
};

namespace {

void OnError(j_common_ptr cinfo) {
  auto* state = static_cast<JpegDecoder::State*>(cinfo->client_data);
  (*cinfo->err->format_message)(cinfo, state->message);
  std::longjmp(state->jump, 1);
}

void OnMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* state = static_cast<JpegDecoder::State*>(cinfo->client_data);
  if (!state->warned) (*cinfo->err->format_message)(cinfo, state->message);
  state->warned = true;
}

}  // namespace

JpegDecoder::JpegDecoder(DecodeLimits limits)
    : limits_(limits), state_(std::make_unique<State>()) {
  state_->cinfo.err = jpeg_std_error(&state_->err);
  state_->err.error_exit = OnError;
  state_->err.emit_message = OnMessage;
  state_->cinfo.client_data = state_.get();
  jpeg_create_decompress(&state_->cinfo);
}

JpegDecoder::~JpegDecoder() { jpeg_destroy_decompress(&state_->cinfo); }

namespace {

// PIL's CMYK -> RGB (Convert.c, cmyk2rgb): R = (255 - K) - C (255 - K) / 255
// with its rounding, after undoing Adobe's inverted storage (PIL's
// "CMYK;I" raw mode, used when the file has an Adobe marker).
void CmykToRgb(const uint8_t* cmyk, int width, bool inverted, uint8_t* rgb) {
  auto muldiv255 = [](int a, int b) {
    const int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
  };
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int k = inverted ? 255 - cmyk[3] : cmyk[3];
    const int nk = 255 - k;
    for (int c = 0; c < 3; ++c) {
      const int v = inverted ? 255 - cmyk[c] : cmyk[c];
      rgb[c] = static_cast<uint8_t>(std::clamp(nk - muldiv255(v, nk), 0, 255));
    }
  }
}

// The largest DCT scale denominator d (8, 4, 2 or 1) that keeps `region`
// at least `target` large. The in-between factors libjpeg offers (3/8,
// 5/8, ...) cost about as much as a full decode, so only powers of two.
int ChooseScale(const Region& region, const ImageSize& target) {
  for (int d : {8, 4, 2}) {
    if (region.width >= d * target.width &&
        region.height >= d * target.height) {
      return d;
    }
  }
  return 1;
}

// The decoded rows of a region, in a buffer that starts at a block boundary.
struct ScaledRegion {
  size_t offset;  // of the region's first pixel
  int stride;
  ImageSize size;
};

// Reads region `r` (in source pixels) at scale 1/`d` into *buffer, after
// jpeg_start_decompress. Plain locals only: libjpeg's errors longjmp out
// of here to DecodeRegion.
ScaledRegion ReadRegion(jpeg_decompress_struct* cinfo, const Region& r, int d,
                        bool cmyk, std::vector<uint8_t>* buffer) {
  // The region in scaled pixels.
  const int x0 = r.x / d, y0 = r.y / d;
  const int x1 =
      std::min<int>((r.x + r.width + d - 1) / d, cinfo->output_width);
  const int y1 =
      std::min<int>((r.y + r.height + d - 1) / d, cinfo->output_height);
  JDIMENSION crop_x = x0, crop_width = x1 - x0;
  if (cinfo->progressive_mode) {
    // A progressive file whose scans leave coefficients imprecise is
    // smoothed block by block from its neighbours' DC values, two blocks
    // each way; a cropped decode gives its first block column copies of
    // itself as left neighbours. Three iMCU columns more keep the
    // smoothing's edge (and the upsampling's) away from the region.
    const JDIMENSION widen = std::min<JDIMENSION>(
        crop_x, 3 * cinfo->max_h_samp_factor * cinfo->min_DCT_scaled_size);
    crop_x -= widen;
    crop_width += widen;
  }
  if (crop_width < cinfo->output_width) {
    // Widens to block boundaries: crop_x moves left, crop_width grows.
    jpeg_crop_scanline(cinfo, &crop_x, &crop_width);
  }
  const size_t stride = size_t(crop_width) * 3;
  // CMYK rows go through a 4-byte-per-pixel row at the end of the buffer.
  buffer->resize(stride * (y1 - y0) + (cmyk ? size_t(crop_width) * 4 : 0));
  uint8_t* cmyk_row = buffer->data() + stride * (y1 - y0);
  if (y0 > 0) jpeg_skip_scanlines(cinfo, y0);
  for (int row = 0; row < y1 - y0; ++row) {
    JSAMPROW line = cmyk ? cmyk_row : buffer->data() + row * stride;
    jpeg_read_scanlines(cinfo, &line, 1);
    if (cmyk) {
      CmykToRgb(cmyk_row, crop_width, cinfo->saw_Adobe_marker,
                buffer->data() + row * stride);
    }
  }
  return {
      size_t(x0 - crop_x) * 3, static_cast<int>(stride), {x1 - x0, y1 - y0}};
}

}  // namespace

absl::Status JpegDecoder::DecodeRegion(
    std::span<const uint8_t> jpeg,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  State* s = state_.get();
  jpeg_decompress_struct* cinfo = &s->cinfo;
  s->warned = false;
  s->message[0] = '\0';
  // Plain locals only below: a longjmp may land here.
  ImageSize size;
  if (setjmp(s->jump) != 0) {
    jpeg_abort_decompress(cinfo);
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt or unsupported JPEG: ", s->message));
  }
  if (jpeg.empty()) return absl::InvalidArgumentError("empty file");
  jpeg_mem_src(cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(cinfo, TRUE);
  size = {static_cast<int>(cinfo->image_width),
          static_cast<int>(cinfo->image_height)};
  if (absl::Status refused = Refuse(size); !refused.ok()) {
    jpeg_abort_decompress(cinfo);
    return refused;
  }
  const RegionRequest request = plan(size);
  const Region r = ClampRegion(request.region, size);
  const int d = ChooseScale(r, request.target);
  cinfo->scale_num = 1;
  cinfo->scale_denom = d;
  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK ||
                    cinfo->jpeg_color_space == JCS_YCCK;
  // libjpeg cannot turn CMYK into RGB; it gives CMYK rows, converted below.
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_EXT_RGB;
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_start_decompress(cinfo);
  const ScaledRegion scaled = ReadRegion(cinfo, r, d, cmyk, buffer);
  jpeg_abort_decompress(cinfo);  // the rows below the region are not needed
  if (s->warned) {
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt JPEG data: ", s->message));
  }
  out->data = buffer->data() + scaled.offset;
  out->stride = scaled.stride;
  out->size = scaled.size;
  out->scale_denom = d;
  return absl::OkStatus();
}

absl::Status JpegDecoder::Refuse(const ImageSize& size) const {
  if (size.Pixels() > limits_.max_pixels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image is ", size.width, "x", size.height, " = ", size.Pixels(),
        " pixels, above the limit of ", limits_.max_pixels));
  }
  return absl::OkStatus();
}

}  // namespace stoker
