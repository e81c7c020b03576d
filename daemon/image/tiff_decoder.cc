#include "daemon/image/tiff_decoder.h"

#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "daemon/image/tiff_format.h"
#include "daemon/image/whole_image.h"

namespace stoker {
namespace {

// The bytes libtiff reads through the client procs below, and what it said.
struct MemoryTiff {
  std::span<const uint8_t> bytes;
  uint64_t at = 0;
  std::string error;  // the first error libtiff reported
  bool guessed_extra_samples = false;
};

MemoryTiff* From(thandle_t handle) { return static_cast<MemoryTiff*>(handle); }

tmsize_t ReadProc(thandle_t handle, void* buffer, tmsize_t size) {
  MemoryTiff* m = From(handle);
  if (size <= 0 || m->at >= m->bytes.size()) return 0;
  const uint64_t n =
      std::min<uint64_t>(uint64_t(size), m->bytes.size() - m->at);
  std::memcpy(buffer, m->bytes.data() + m->at, n);
  m->at += n;
  return tmsize_t(n);
}

tmsize_t WriteProc(thandle_t, void*, tmsize_t) { return -1; }

toff_t SeekProc(thandle_t handle, toff_t offset, int whence) {
  MemoryTiff* m = From(handle);
  const uint64_t base = whence == SEEK_CUR   ? m->at
                        : whence == SEEK_END ? m->bytes.size()
                                             : 0;
  const uint64_t to = base + offset;  // toff_t wraps for negative offsets
  if (to > (uint64_t{1} << 62)) return toff_t(-1);
  m->at = to;
  return to;
}

int CloseProc(thandle_t) { return 0; }
toff_t SizeProc(thandle_t handle) { return From(handle)->bytes.size(); }
int MapProc(thandle_t, void**, toff_t*) { return 0; }
void UnmapProc(thandle_t, void*, toff_t) {}

int OnError(TIFF*, void* user, const char* module, const char* format,
            va_list args) {
  MemoryTiff* m = static_cast<MemoryTiff*>(user);
  if (m->error.empty()) {
    char text[256];
    std::vsnprintf(text, sizeof(text), format, args);
    m->error = absl::StrCat(module != nullptr ? module : "libtiff", ": ", text);
  }
  return 1;  // handled: not passed to the process-wide handler
}

int OnWarning(TIFF*, void* user, const char*, const char* format,
              va_list args) {
  char text[256];
  std::vsnprintf(text, sizeof(text), format, args);
  // libtiff made up ExtraSamples that the file does not hold; Pillow reads
  // the tags as stored, so the two would disagree on the layout.
  if (std::strstr(text, "Defining non-color channels") != nullptr) {
    static_cast<MemoryTiff*>(user)->guessed_extra_samples = true;
  }
  return 1;
}

absl::Status TiffError(const MemoryTiff& m, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(
      "corrupt or unsupported TIFF: ", m.error.empty() ? what : m.error));
}

struct TiffCloser {
  void operator()(TIFF* tiff) const { TIFFClose(tiff); }
};
using TiffHandle = std::unique_ptr<TIFF, TiffCloser>;

TiffHandle Open(MemoryTiff* m) {
  static std::once_flag quiet;
  std::call_once(quiet, [] {
    TIFFSetErrorHandler(nullptr);
    TIFFSetWarningHandler(nullptr);
  });
  std::unique_ptr<TIFFOpenOptions, void (*)(TIFFOpenOptions*)> options(
      TIFFOpenOptionsAlloc(), TIFFOpenOptionsFree);
  if (options == nullptr) return nullptr;
  TIFFOpenOptionsSetMaxSingleMemAlloc(options.get(), tmsize_t{256} << 20);
  TIFFOpenOptionsSetErrorHandlerExtR(options.get(), OnError, m);
  TIFFOpenOptionsSetWarningHandlerExtR(options.get(), OnWarning, m);
  // "m": no memory mapping (the bytes are in memory already).
  return TiffHandle(TIFFClientOpenExt("memory", "rm", m, ReadProc, WriteProc,
                                      SeekProc, CloseProc, SizeProc, MapProc,
                                      UnmapProc, options.get()));
}

TiffTags ReadTags(TIFF* tiff) {
  TiffTags t;
  TIFFGetField(tiff, TIFFTAG_PHOTOMETRIC, &t.photometric);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_BITSPERSAMPLE, &t.bits_per_sample);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &t.samples_per_pixel);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLEFORMAT, &t.sample_format);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_PLANARCONFIG, &t.planar_config);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_FILLORDER, &t.fill_order);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_COMPRESSION, &t.compression);
  uint16_t count = 0;
  const uint16_t* extra = nullptr;
  if (TIFFGetField(tiff, TIFFTAG_EXTRASAMPLES, &count, &extra) == 1 &&
      extra != nullptr) {
    t.extra_samples.assign(extra, extra + count);
  }
  if (t.photometric == 3) {
    TIFFGetField(tiff, TIFFTAG_COLORMAP, &t.colormap[0], &t.colormap[1],
                 &t.colormap[2]);
  }
  return t;
}

// The rows of samples of one strip or tile, and where they go.
struct Chunk {
  uint8_t* samples;
  tmsize_t row_bytes;
};

absl::Status ReadStrips(TIFF* tiff, const MemoryTiff& m, const TiffFormat& f,
                        ImageSize size, Chunk chunk, uint8_t* rgb) {
  uint32_t rows_per_strip = 0;
  TIFFGetFieldDefaulted(tiff, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
  if (rows_per_strip == 0 || rows_per_strip > uint32_t(size.height)) {
    rows_per_strip = uint32_t(size.height);
  }
  for (uint32_t row = 0; row < uint32_t(size.height); row += rows_per_strip) {
    const uint32_t rows = std::min(rows_per_strip, size.height - row);
    const tmsize_t want = tmsize_t(rows) * chunk.row_bytes;
    if (TIFFReadEncodedStrip(tiff, TIFFComputeStrip(tiff, row, 0),
                             chunk.samples, want) != want) {
      return TiffError(m, absl::StrCat("cannot read the strip of row ", row));
    }
    for (uint32_t r = 0; r < rows; ++r) {
      ConvertTiffRow(f, chunk.samples + r * chunk.row_bytes, size.width,
                     rgb + (size_t(row) + r) * size.width * 3);
    }
  }
  return absl::OkStatus();
}

// Whether every strip or tile lies inside the file, and uncompressed ones
// hold the bytes the image needs (libtiff would find out only while
// reading, after the output is allocated): a header claiming a large image
// with its data missing costs nothing.
bool ChunksInFile(TIFF* tiff, uint64_t file_size, uint64_t height) {
  const bool tiled = TIFFIsTiled(tiff) != 0;
  const uint32_t count =
      tiled ? TIFFNumberOfTiles(tiff) : TIFFNumberOfStrips(tiff);
  uint64_t* offsets = nullptr;
  uint64_t* sizes = nullptr;
  if (count == 0 ||
      TIFFGetField(tiff, tiled ? TIFFTAG_TILEOFFSETS : TIFFTAG_STRIPOFFSETS,
                   &offsets) != 1 ||
      TIFFGetField(tiff,
                   tiled ? TIFFTAG_TILEBYTECOUNTS : TIFFTAG_STRIPBYTECOUNTS,
                   &sizes) != 1 ||
      offsets == nullptr || sizes == nullptr) {
    return false;
  }
  uint64_t total = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (sizes[i] == 0 || offsets[i] > file_size ||
        sizes[i] > file_size - offsets[i]) {
      return false;
    }
    total += sizes[i];
  }
  uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tiff, TIFFTAG_COMPRESSION, &compression);
  if (compression != COMPRESSION_NONE) return true;
  const uint64_t need = tiled ? uint64_t(count) * uint64_t(TIFFTileSize(tiff))
                              : height * uint64_t(TIFFScanlineSize(tiff));
  return total >= need;
}

// Tiles are multiples of 16 pixels (TIFF 6.0): none needs to exceed the
// image rounded up to 16 in either direction.
bool TilesFit(TIFF* tiff, uint32_t width, uint32_t height) {
  uint32_t tile_width = 0, tile_height = 0;
  TIFFGetField(tiff, TIFFTAG_TILEWIDTH, &tile_width);
  TIFFGetField(tiff, TIFFTAG_TILELENGTH, &tile_height);
  auto round16 = [](uint32_t v) { return (uint64_t(v) + 15) / 16 * 16; };
  return tile_width <= round16(width) && tile_height <= round16(height);
}

absl::Status ReadTiles(TIFF* tiff, const MemoryTiff& m, const TiffFormat& f,
                       ImageSize size, Chunk chunk, uint8_t* rgb) {
  uint32_t tile_width = 0, tile_height = 0;
  TIFFGetField(tiff, TIFFTAG_TILEWIDTH, &tile_width);
  TIFFGetField(tiff, TIFFTAG_TILELENGTH, &tile_height);
  const tmsize_t tile_bytes = TIFFTileSize(tiff);
  if (tile_width == 0 || tile_height == 0 || tile_bytes <= 0) {
    return TiffError(m, "bad tile size");
  }
  const uint32_t width = size.width, height = size.height;
  for (uint32_t y = 0; y < height; y += tile_height) {
    for (uint32_t x = 0; x < width; x += tile_width) {
      if (TIFFReadEncodedTile(tiff, TIFFComputeTile(tiff, x, y, 0, 0),
                              chunk.samples, tile_bytes) != tile_bytes) {
        return TiffError(m,
                         absl::StrCat("cannot read the tile at ", x, ",", y));
      }
      const uint32_t rows = std::min(tile_height, height - y);
      const int columns = int(std::min(tile_width, width - x));
      for (uint32_t r = 0; r < rows; ++r) {
        ConvertTiffRow(f, chunk.samples + r * chunk.row_bytes, columns,
                       rgb + ((size_t(y) + r) * width + x) * 3);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsTiff(std::span<const uint8_t> bytes) {
  static constexpr char kPrefixes[][5] = {"MM\x00\x2a", "II\x2a\x00",
                                          "MM\x2a\x00", "II\x00\x2a",
                                          "MM\x00\x2b", "II\x2b\x00"};
  if (bytes.size() < 4) return false;
  for (const char* prefix : kPrefixes) {
    if (std::memcmp(bytes.data(), prefix, 4) == 0) return true;
  }
  return false;
}

TiffDecoder::TiffDecoder(DecodeLimits limits) : limits_(limits) {}

absl::Status TiffDecoder::DecodeRegion(
    std::span<const uint8_t> bytes,
    absl::FunctionRef<RegionRequest(const ImageSize&)> plan,
    std::vector<uint8_t>* buffer, DecodedRegion* out) {
  MemoryTiff m{.bytes = bytes};
  const TiffHandle tiff = Open(&m);
  if (tiff == nullptr) return TiffError(m, "cannot read the header");
  if (m.guessed_extra_samples) {
    return absl::InvalidArgumentError(
        "unsupported TIFF: ExtraSamples does not match SamplesPerPixel");
  }
  TiffFormat format;
  if (absl::Status ok = ChooseTiffFormat(ReadTags(tiff.get()), &format);
      !ok.ok()) {
    return ok;
  }
  uint32_t width = 0, height = 0;
  TIFFGetField(tiff.get(), TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tiff.get(), TIFFTAG_IMAGELENGTH, &height);
  if (absl::Status ok = CheckImageSize("TIFF", width, height, limits_);
      !ok.ok()) {
    return ok;
  }
  const bool tiled = TIFFIsTiled(tiff.get()) != 0;
  if (tiled && !TilesFit(tiff.get(), width, height)) {
    // libtiff does not clamp tiles to the image: a 1-row image of 4M-row
    // tiles would have a worker inflate gigabytes per row it keeps.
    return TiffError(m, "tiles larger than the image needs");
  }
  const tmsize_t chunk_bytes =
      tiled ? TIFFTileSize(tiff.get()) : TIFFStripSize(tiff.get());
  const tmsize_t row_bytes =
      tiled ? TIFFTileRowSize(tiff.get()) : TIFFScanlineSize(tiff.get());
  // At most 6 bytes a pixel of the largest image: a strip or tile larger
  // than that is a hostile header, not a picture.
  if (chunk_bytes <= 0 || row_bytes <= 0 ||
      uint64_t(chunk_bytes) > 6 * limits_.max_pixels) {
    return TiffError(m, "bad strip or tile size");
  }
  if (!ChunksInFile(tiff.get(), m.bytes.size(), height)) {
    return TiffError(m,
                     "strip or tile data missing or past the end of the file");
  }
  const ImageSize size{int(width), int(height)};
  const Region r = PlanRegion(plan, size);
  const size_t rgb_bytes = size.Pixels() * 3;
  buffer->resize(rgb_bytes + size_t(chunk_bytes));
  const Chunk chunk{buffer->data() + rgb_bytes, row_bytes};
  absl::Status read =
      tiled ? ReadTiles(tiff.get(), m, format, size, chunk, buffer->data())
            : ReadStrips(tiff.get(), m, format, size, chunk, buffer->data());
  if (!read.ok()) return read;
  PointAtRegion(buffer->data(), size, r, out);
  return absl::OkStatus();
}

}  // namespace stoker
