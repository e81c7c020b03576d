// Helpers shared by stoker's tests: a real daemon on a private socket, small
// generated datasets, an independent reference JPEG decoder and a /dev/shm
// leak check.
#ifndef STOKER_TESTS_TEST_UTIL_H_
#define STOKER_TESTS_TEST_UTIL_H_

// Which sanitizer instruments this build: GCC defines __SANITIZE_*__, clang
// (the default compiler, see scripts/build.sh) answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define STOKER_UNDER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define STOKER_UNDER_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STOKER_UNDER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define STOKER_UNDER_TSAN 1
#endif
#endif

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bench/support/dataset_gen.h"
#include "bench/support/process.h"
#include "daemon/daemon.h"
#include "daemon/image/jpeg_decoder.h"
#include "stoker/client.h"

namespace stoker::testing {

// An in-process stokerd on a socket in its own temporary directory. Every
// test gets its own socket, hence its own segment prefix: tests run in
// parallel without seeing each other.
class TestDaemon {
 public:
  explicit TestDaemon(DaemonOptions options = {});
  ~TestDaemon();  // shuts down, then checks nothing is left in /dev/shm

  const std::string& dir() const { return dir_.path(); }
  std::string target() const { return daemon_->target(); }
  Daemon& daemon() { return *daemon_; }
  std::unique_ptr<Client> Connect();
  // Segments in /dev/shm that belong to this daemon.
  std::vector<std::string> Segments() const;
  void Shutdown() { daemon_->Shutdown(); }

 private:
  testdata::TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
};

// Why a user other than root, and in none of the directories' groups, could
// not reach `path`: the first directory on the way (from /) that others may
// not search, with its mode; "" when every one is open. Tests that run a
// client as another user check it first: in a chroot whose root directory
// is 0700 (what `mktemp -d` gives a debootstrap target) no other user can
// run a program or reach a socket at all.
std::string PathClosedToOthers(const std::string& path);

// A fresh socket address inside `dir`.
std::string SocketTarget(const std::string& dir);

// Generates an ImageFolder under `root` (small images, fast).
testdata::GeneratedDataset MakeDataset(const std::string& root, int classes,
                                       int per_class, int width = 96,
                                       int height = 72, bool vary_size = true,
                                       bool smooth = false);

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // RGB, packed
};

// Decodes with the TurboJPEG API: a code path independent of the daemon's.
RgbImage ReferenceDecode(const std::string& path);

// Area-average (box filter) resize computed in floating point: an
// independent reference for the daemon's resampler.
RgbImage ReferenceResize(const RgbImage& image, int width, int height);

double MeanAbsDiff(const uint8_t* a, const uint8_t* b, size_t n);

// A tar shard `dir`/`name`.tar holding these (name, bytes) members in this
// order, written by Python's tarfile (as webdataset's TarWriter writes
// shards); its path.
std::string WriteTarShard(
    const std::string& dir, const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& members);

// The bytes of the file at `path` (empty if it cannot be read).
std::vector<uint8_t> FileBytes(const std::string& path);

// What a command printed and how it ended.
struct CommandRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
  std::string err;
  std::string all() const { return out + err; }
};

// Runs `command` with /bin/sh, its stdout through a pipe and its stderr
// through a file in `scratch` (so neither can fill up and block the other).
CommandRun RunCommand(const std::string& command, const std::string& scratch);

// Polls `done` until it holds or 20 s pass: for asynchronous effects
// (a release travelling to the daemon), not for timing.
bool Eventually(const std::function<bool()>& done);

// The daemon's stats for job `id`, if it lists it.
std::optional<JobStats> JobStatsOf(Client& client, const std::string& id);

// What a stoker_probe process logged: its batches in order, and whether it
// reached "ready" or "end".
struct LoggedBatch {
  uint64_t epoch = 0;
  uint64_t index = 0;
  std::vector<int64_t> samples;  // dataset indices
};
struct ProbeLog {
  std::vector<LoggedBatch> batches;
  std::vector<std::string> jobs;  // "job <id>" lines
  bool ready = false;
  bool end = false;
};
ProbeLog ReadProbeLog(const std::string& path);

// The whole of an encoded image through a decoder's DecodeRegion (a
// JpegDecoder or PngDecoder), as packed RGB; *size gets its size.
template <typename Decoder>
absl::Status DecodeWhole(Decoder& decoder, std::span<const uint8_t> encoded,
                         std::vector<uint8_t>* rgb, ImageSize* size) {
  std::vector<uint8_t> buffer;
  DecodedRegion region;
  absl::Status status = decoder.DecodeRegion(
      encoded,
      [&](const ImageSize& s) {
        *size = s;
        return RegionRequest{{0, 0, s.width, s.height}, s};
      },
      &buffer, &region);
  if (!status.ok()) return status;
  rgb->clear();
  for (int y = 0; y < region.size.height; ++y) {
    const uint8_t* row = region.data + size_t(y) * region.stride;
    rgb->insert(rgb->end(), row, row + size_t(region.size.width) * 3);
  }
  return absl::OkStatus();
}

}  // namespace stoker::testing

#endif  // STOKER_TESTS_TEST_UTIL_H_
