#include "daemon/sample_decoder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "libyuv/planar_functions.h"
#include "libyuv/scale.h"

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

void ResizeRgb(const uint8_t* src, ImageSize src_size, uint8_t* dst,
               ImageSize dst_size, std::vector<uint8_t>* planes) {
  const size_t src_plane = src_size.Pixels();
  const size_t dst_plane = dst_size.Pixels();
  planes->resize(3 * (src_plane + dst_plane));
  uint8_t* s[3];
  uint8_t* d[3];
  for (int c = 0; c < 3; ++c) {
    s[c] = planes->data() + c * src_plane;
    d[c] = planes->data() + 3 * src_plane + c * dst_plane;
  }
  libyuv::SplitRGBPlane(src, src_size.width * 3, s[0], src_size.width, s[1],
                        src_size.width, s[2], src_size.width, src_size.width,
                        src_size.height);
  const bool shrinking = dst_size.width < src_size.width ||
                         dst_size.height < src_size.height;
  for (int c = 0; c < 3; ++c) {
    libyuv::ScalePlane(s[c], src_size.width, src_size.width, src_size.height,
                       d[c], dst_size.width, dst_size.width, dst_size.height,
                       shrinking ? libyuv::kFilterBox : libyuv::kFilterBilinear);
  }
  libyuv::MergeRGBPlane(d[0], dst_size.width, d[1], dst_size.width, d[2],
                        dst_size.width, dst, dst_size.width * 3,
                        dst_size.width, dst_size.height);
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
    decoded_.resize(s.Pixels() * 3);
    return Destination{decoded_.data(), PixelFormat::kRgb};
  });
  if (!decoded.ok() || direct) return decoded;
  ResizeRgb(decoded_.data(), size, out, out_size, &scaled_);
  return absl::OkStatus();
}

}  // namespace stoker
