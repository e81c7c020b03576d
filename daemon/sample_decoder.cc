#include "daemon/sample_decoder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "libyuv/convert_from_argb.h"
#include "libyuv/scale_argb.h"

namespace stoker {

absl::Status ReadFile(const std::string& path, std::vector<uint8_t>* buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError("not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        "file is ", st.st_size, " bytes, above the limit of ", kMaxFileBytes));
  }
  buffer->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < buffer->size()) {
    const ssize_t n = ::pread(fd, buffer->data() + done, buffer->size() - done,
                              static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      return absl::DataLossError(
          err ? absl::StrCat("read failed: ", std::strerror(err))
              : "file shrank while being read");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return absl::OkStatus();
}

void ResizeRgbxToRgb(const uint8_t* src, ImageSize src_size, uint8_t* dst,
                     ImageSize dst_size, std::vector<uint8_t>* scratch) {
  scratch->resize(size_t(dst_size.width) * dst_size.height * 4);
  const bool shrinking = dst_size.width < src_size.width ||
                         dst_size.height < src_size.height;
  // libyuv's "ARGB" is 4 bytes per pixel in memory order B,G,R,A; scaling
  // treats the 4 channels alike, and ARGBToRGB24 keeps the first three bytes
  // in order, so RGBX in gives RGB out.
  libyuv::ARGBScale(src, src_size.width * 4, src_size.width, src_size.height,
                    scratch->data(), dst_size.width * 4, dst_size.width,
                    dst_size.height,
                    shrinking ? libyuv::kFilterBox : libyuv::kFilterBilinear);
  libyuv::ARGBToRGB24(scratch->data(), dst_size.width * 4, dst,
                      dst_size.width * 3, dst_size.width, dst_size.height);
}

absl::Status SampleDecoder::DecodeTo(const std::string& path,
                                     ImageSize out_size, uint8_t* out) {
  if (absl::Status read = ReadFile(path, &file_); !read.ok()) return read;
  // An image already at the output size is decoded straight into the slot;
  // any other goes through the scratch buffer and the resampler.
  ImageSize size;
  bool direct = false;
  absl::Status decoded = jpeg_.Decode(file_, [&](const ImageSize& s) {
    size = s;
    direct = s.width == out_size.width && s.height == out_size.height;
    if (direct) return Destination{out, PixelFormat::kRgb};
    decoded_.resize(s.Pixels() * 4);
    return Destination{decoded_.data(), PixelFormat::kRgbx};
  });
  if (!decoded.ok() || direct) return decoded;
  ResizeRgbxToRgb(decoded_.data(), size, out, out_size, &scaled_);
  return absl::OkStatus();
}

}  // namespace stoker
