#include "tests/test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <turbojpeg.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon/datasets/sample_file.h"
#include "daemon/shm/shm_segment.h"
#include "gtest/gtest.h"

namespace stoker::testing {

std::string PathClosedToOthers(const std::string& path) {
  std::string dir;
  for (const std::filesystem::path& part :
       std::filesystem::path(path).parent_path()) {
    dir = (std::filesystem::path(dir) / part).string();
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) continue;
    if ((st.st_mode & S_IXOTH) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
      return "the directory " + dir + " is mode " + std::string(mode) +
             ": no other user can pass it, so a client cannot run as "
             "another user here";
    }
  }
  return "";
}

std::string SocketTarget(const std::string& dir) {
  return "unix://" + dir + "/stoker.sock";
}

TestDaemon::TestDaemon(DaemonOptions options) : dir_("stoker-test") {
  options.target = SocketTarget(dir_.path());
  if (options.workers == 0) options.workers = 2;
  auto daemon = Daemon::Start(options);
  if (!daemon.ok()) {
    ADD_FAILURE() << "stokerd failed to start: " << daemon.status();
    std::abort();
  }
  daemon_ = *std::move(daemon);
}

TestDaemon::~TestDaemon() {
  const std::string prefix = daemon_->segment_prefix();
  daemon_->Shutdown();
  EXPECT_TRUE(ListSegments(prefix).empty())
      << "segments left in /dev/shm after shutdown";
}

std::unique_ptr<Client> TestDaemon::Connect() {
  auto client = Client::Connect(target());
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

std::vector<std::string> TestDaemon::Segments() const {
  return ListSegments(daemon_->segment_prefix());
}

testdata::GeneratedDataset MakeDataset(const std::string& root, int classes,
                                       int per_class, int width, int height,
                                       bool vary_size, bool smooth) {
  auto dataset =
      testdata::GenerateImageFolder(root, {.classes = classes,
                                           .images_per_class = per_class,
                                           .width = width,
                                           .height = height,
                                           .vary_size = vary_size,
                                           .smooth = smooth});
  EXPECT_TRUE(dataset.ok()) << dataset.status();
  return dataset.ok() ? *std::move(dataset) : testdata::GeneratedDataset{};
}

RgbImage ReferenceDecode(const std::string& path) {
  const std::string bytes = testdata::ReadTextFile(path);
  RgbImage image;
  tjhandle handle = tjInitDecompress();
  int subsampling = 0, colorspace = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (tjDecompressHeader3(handle, data, bytes.size(), &image.width,
                          &image.height, &subsampling, &colorspace) == 0) {
    image.pixels.resize(size_t(image.width) * image.height * 3);
    if (tjDecompress2(handle, data, bytes.size(), image.pixels.data(),
                      image.width, 0, image.height, TJPF_RGB, 0) != 0) {
      image.pixels.clear();
    }
  }
  tjDestroy(handle);
  EXPECT_FALSE(image.pixels.empty()) << "reference decode failed: " << path;
  return image;
}

RgbImage ReferenceResize(const RgbImage& in, int width, int height) {
  RgbImage out{width, height, std::vector<uint8_t>(size_t(width) * height * 3)};
  const double sx = double(in.width) / width, sy = double(in.height) / height;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      // Average the source area [x*sx, (x+1)*sx) x [y*sy, (y+1)*sy).
      double sum[3] = {0, 0, 0}, weight = 0;
      for (int v = int(y * sy); v < std::ceil((y + 1) * sy); ++v) {
        const double wy =
            std::min<double>(v + 1, (y + 1) * sy) - std::max<double>(v, y * sy);
        for (int u = int(x * sx); u < std::ceil((x + 1) * sx); ++u) {
          const double wx = std::min<double>(u + 1, (x + 1) * sx) -
                            std::max<double>(u, x * sx);
          const uint8_t* p = &in.pixels[(size_t(v) * in.width + u) * 3];
          for (int c = 0; c < 3; ++c) sum[c] += p[c] * wx * wy;
          weight += wx * wy;
        }
      }
      for (int c = 0; c < 3; ++c) {
        out.pixels[(size_t(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::lround(sum[c] / weight));
      }
    }
  }
  return out;
}

double MeanAbsDiff(const uint8_t* a, const uint8_t* b, size_t n) {
  double total = 0;
  for (size_t i = 0; i < n; ++i) total += std::abs(int(a[i]) - int(b[i]));
  return n == 0 ? 0 : total / double(n);
}

CommandRun RunCommand(const std::string& command, const std::string& scratch) {
  const std::string err_path = scratch + "/command.err";
  CommandRun run;
  FILE* pipe = ::popen((command + " 2>" + err_path).c_str(), "r");
  if (pipe == nullptr) {
    run.err = "popen failed";
    return run;
  }
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    run.out.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = testdata::ReadTextFile(err_path);
  return run;
}

bool Eventually(const std::function<bool()>& done) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

std::optional<JobStats> JobStatsOf(Client& client, const std::string& id) {
  auto stats = client.GetStats();
  if (!stats.ok()) return std::nullopt;
  for (const JobStats& job : stats->jobs) {
    if (job.job_id == id) return job;
  }
  return std::nullopt;
}

ProbeLog ReadProbeLog(const std::string& path) {
  ProbeLog log;
  std::istringstream in(testdata::ReadTextFile(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "ready") log.ready = true;
    if (kind == "end") log.end = true;
    if (kind == "job") {
      std::string id;
      words >> id;
      log.jobs.push_back(id);
    }
    if (kind == "batch") {
      LoggedBatch batch;
      words >> batch.epoch >> batch.index;
      int64_t sample;
      while (words >> sample) batch.samples.push_back(sample);
      log.batches.push_back(std::move(batch));
    }
  }
  return log;
}

std::string WriteTarShard(
    const std::string& dir, const std::string& name,
    const std::vector<std::pair<std::string, std::string>>& members) {
  const std::string script = dir + "/" + name + ".py";
  const std::string path = dir + "/" + name + ".tar";
  std::ofstream py(script);
  py << "import io, tarfile\n"
     << "t = tarfile.open('" << path << "', 'w')\n";
  for (const auto& [member, content] : members) {
    py << "data = bytes.fromhex('";
    for (unsigned char c : content) {
      static const char* kHex = "0123456789abcdef";
      py << kHex[c >> 4] << kHex[c & 15];
    }
    py << "')\ninfo = tarfile.TarInfo('" << member << "')\n"
       << "info.size = len(data)\n"
       << "t.addfile(info, io.BytesIO(data))\n";
  }
  py << "t.close()\n";
  py.close();
  EXPECT_EQ(std::system(("python3 " + script).c_str()), 0);
  return path;
}

std::vector<uint8_t> FileBytes(const std::string& path) {
  std::vector<uint8_t> bytes;
  if (!ReadFile(path, &bytes).ok()) bytes.clear();
  return bytes;
}

}  // namespace stoker::testing
