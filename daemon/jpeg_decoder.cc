#include "daemon/jpeg_decoder.h"

// clang-format off
#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <string>

#include "absl/strings/str_cat.h"

namespace stoker {

// libjpeg reports errors through a callback that must not return: it longjmps
// back into Decode(). Nothing with a destructor may live across setjmp there.
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

absl::Status JpegDecoder::Decode(
    std::span<const uint8_t> jpeg,
    absl::FunctionRef<Destination(const ImageSize&)> destination) {
  State* s = state_.get();
  jpeg_decompress_struct* cinfo = &s->cinfo;
  s->warned = false;
  s->message[0] = '\0';
  // Plain locals only below: a longjmp may land here.
  const char* refusal = nullptr;
  ImageSize size;
  if (setjmp(s->jump) != 0) {
    jpeg_abort_decompress(cinfo);
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt or unsupported JPEG: ", s->message));
  }
  if (jpeg.empty()) {
    return absl::InvalidArgumentError("empty file");
  }
  jpeg_mem_src(cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(cinfo, TRUE);
  size = {static_cast<int>(cinfo->image_width),
          static_cast<int>(cinfo->image_height)};
  if (cinfo->jpeg_color_space == JCS_CMYK ||
      cinfo->jpeg_color_space == JCS_YCCK) {
    refusal = "CMYK/YCCK JPEG is not supported yet";
  } else if (size.Pixels() > limits_.max_pixels) {
    refusal = "too many pixels";
  }
  if (refusal != nullptr) {
    jpeg_abort_decompress(cinfo);
    if (size.Pixels() > limits_.max_pixels) {
      return absl::InvalidArgumentError(absl::StrCat(
          "image is ", size.width, "x", size.height, " = ", size.Pixels(),
          " pixels, above the limit of ", limits_.max_pixels));
    }
    return absl::InvalidArgumentError(refusal);
  }
  const Destination dest = destination(size);
  cinfo->out_color_space =
      dest.format == PixelFormat::kRgb ? JCS_EXT_RGB : JCS_EXT_RGBX;
  cinfo->dct_method = JDCT_ISLOW;
  jpeg_start_decompress(cinfo);
  uint8_t* out = dest.data;
  const size_t stride = size_t(size.width) * Channels(dest.format);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = out + size_t(cinfo->output_scanline) * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  if (s->warned) {
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt JPEG data: ", s->message));
  }
  return absl::OkStatus();
}

}  // namespace stoker
