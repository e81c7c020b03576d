// The file suffixes stoker reads as images, in the order a classic
// WebDataset sample's image is chosen when it has several: what the
// daemon's shard index (which member is a sample's image) and its job spec
// (which field is an image) agree on. Header-only.
#ifndef STOKER_COMMON_IMAGE_SUFFIXES_H_
#define STOKER_COMMON_IMAGE_SUFFIXES_H_

#include <array>
#include <string_view>

namespace stoker {

inline constexpr std::array<std::string_view, 9> kImageSuffixes = {
    "jpg", "jpeg", "png", "webp", "ppm", "pgm", "bmp", "tif", "tiff"};

// The place of `suffix` (lower-case) in kImageSuffixes; -1 if none.
constexpr int ImageSuffixRank(std::string_view suffix) {
  for (size_t i = 0; i < kImageSuffixes.size(); ++i) {
    if (suffix == kImageSuffixes[i]) return int(i);
  }
  return -1;
}

// Whether a member of this suffix is an image, by its last dot part, as
// webdataset's decoders choose ("seg.png" is an image; "png.txt" is not).
constexpr bool IsImageSuffix(std::string_view suffix) {
  const size_t dot = suffix.rfind('.');
  return ImageSuffixRank(dot == std::string_view::npos
                             ? suffix
                             : suffix.substr(dot + 1)) >= 0;
}

}  // namespace stoker

#endif  // STOKER_COMMON_IMAGE_SUFFIXES_H_
