// Responses stay bounded whatever names users give (issue: a job over a
// manifest of 20,000 classes with 250-byte names failed its own CreateJob
// client-side and broke ListJobs for everyone; 16 jobs over files with
// 4 KiB paths that fail to decode broke root's `stokerctl status`). Each
// test reads the daemon's answers through a plain gRPC client with gRPC's
// default 4 MiB receive limit, as any tool would, and through the SDK and
// stokerctl.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/naming.h"
#include "gtest/gtest.h"
#include "stoker/v1/loader.grpc.pb.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testing::TestDaemon;

// A stub with gRPC's defaults (4 MiB receive limit).
std::unique_ptr<v1::Loader::Stub> DefaultStub(const std::string& target) {
  return v1::Loader::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
}

grpc::Status Call(
    const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
  grpc::ClientContext context;
  context.AddMetadata(kClientMetadataKey, "1-bounded");
  return rpc(&context);
}

// Class i's name: 250 bytes, distinct.
std::string ClassName(int i) {
  return absl::StrCat(std::string(240, 'c'), "_", 1000000 + i);
}

TEST(BoundedResponses, TwentyThousandLongClassNamesListAndPage) {
  TestDaemon daemon;
  testing::MakeDataset(daemon.dir() + "/data", 1, 1, 32, 24);
  std::string image;
  for (const auto& entry :
       fs::recursive_directory_iterator(daemon.dir() + "/data")) {
    if (entry.is_regular_file()) image = entry.path().string();
  }
  ASSERT_FALSE(image.empty());
  constexpr int kClasses = 20000;
  const std::string manifest = daemon.dir() + "/rows.csv";
  {
    std::ofstream out(manifest);
    out << "path,label,class\n";
    for (int i = 0; i < kClasses; ++i) {
      out << image << "," << i << "," << ClassName(i) << "\n";
    }
  }
  auto client = daemon.Connect();
  JobSpec spec{.manifest = manifest, .batch_size = 4, .slots = 2};
  spec.height = spec.width = 8;
  auto job = client->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->class_names.size(), static_cast<size_t>(kClasses));
  for (int i : {0, 1, 999, 1000, 1001, 5000, kClasses - 1}) {
    EXPECT_EQ(job->class_names[i], ClassName(i)) << i;
  }
  auto again = client->GetJob(job->id);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->class_names, job->class_names);
  auto listed = client->ListJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].class_names, job->class_names);

  // A default client: every answer fits in 4 MiB, and says how many names
  // it left out.
  auto stub = DefaultStub(daemon.target());
  v1::GetJobRequest get;
  get.set_job_id(job->id);
  v1::Job wire;
  grpc::Status status =
      Call([&](auto* c) { return stub->GetJob(c, get, &wire); });
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(wire.num_classes(), static_cast<uint64_t>(kClasses));
  EXPECT_GT(wire.class_names_size(), 0);
  EXPECT_LT(wire.class_names_size(), kClasses);
  EXPECT_LE(wire.ByteSizeLong(), size_t{1} << 20);
  v1::ListJobsResponse page;
  status = Call(
      [&](auto* c) { return stub->ListJobs(c, v1::ListJobsRequest(), &page); });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(page.jobs_size(), 1);
  EXPECT_TRUE(page.next_page_token().empty());
  v1::GetClassNamesRequest names_request;
  names_request.set_job_id(job->id);
  names_request.set_offset(kClasses - 3);
  v1::ClassNames names;
  status = Call(
      [&](auto* c) { return stub->GetClassNames(c, names_request, &names); });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(names.class_names_size(), 3);
  EXPECT_EQ(names.class_names(2), ClassName(kClasses - 1));
}

TEST(BoundedResponses, ListJobsPagesInIdOrderAndSkipsNothing) {
  DaemonOptions options;
  options.max_jobs = 40;
  options.max_jobs_per_user = 40;
  TestDaemon daemon(options);
  testing::MakeDataset(daemon.dir() + "/data", 2, 2, 32, 24);
  auto client = daemon.Connect();
  JobSpec spec{
      .dataset_path = daemon.dir() + "/data", .batch_size = 2, .slots = 1};
  spec.height = spec.width = 8;
  std::set<std::string> created;
  for (int i = 0; i < 25; ++i) {
    auto job = client->CreateJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    created.insert(job->id);
  }
  auto stub = DefaultStub(daemon.target());
  v1::ListJobsRequest request;
  request.set_page_size(10);
  std::vector<std::string> seen;
  int pages = 0;
  do {
    v1::ListJobsResponse page;
    const grpc::Status status =
        Call([&](auto* c) { return stub->ListJobs(c, request, &page); });
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_LE(page.jobs_size(), 10);
    for (const v1::Job& job : page.jobs()) seen.push_back(job.id());
    request.set_page_token(page.next_page_token());
    ASSERT_LT(++pages, 10);
  } while (!request.page_token().empty());
  EXPECT_EQ(pages, 3);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), created);
  EXPECT_EQ(seen.size(), created.size());
  auto all = client->ListJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), created.size());
}

// `count` undecodable files behind a 3.8 KiB directory path (PATH_MAX is
// 4096), each name about 195 bytes.
std::string DeepBadFiles(const std::string& root, int count) {
  std::string dir = root;
  for (int level = 0; level < 15; ++level) {
    dir += "/" + std::string(250, static_cast<char>('a' + level));
  }
  fs::create_directories(dir);
  for (int i = 0; i < count; ++i) {
    std::ofstream(absl::StrCat(dir, "/", std::string(190, 'f'), i, ".jpg"))
        << "not an image";
  }
  return dir;
}

TEST(BoundedResponses, StatsOfJobsFullOfLongFailingPathsStayReadable) {
  TestDaemon daemon;
  testing::MakeDataset(daemon.dir() + "/data", 1, 192, 32, 24);
  const std::string bad = DeepBadFiles(daemon.dir() + "/deep", 64);
  std::vector<std::string> good;
  for (const auto& entry :
       fs::recursive_directory_iterator(daemon.dir() + "/data")) {
    if (entry.is_regular_file()) good.push_back(entry.path().string());
  }
  ASSERT_EQ(good.size(), 192u);
  // The first batch: each bad file followed by three good ones (a failed
  // sample is replaced by another, and a job whose replacements keep
  // failing ends).
  const std::string manifest = daemon.dir() + "/rows.csv";
  {
    std::ofstream out(manifest);
    out << "path,label\n";
    size_t next_good = 0;
    for (const auto& entry : fs::directory_iterator(bad)) {
      out << entry.path().string() << ",0\n";
      for (int k = 0; k < 3; ++k) out << good[next_good++] << ",0\n";
    }
  }
  auto client = daemon.Connect();
  JobSpec spec{.manifest = manifest, .batch_size = 256, .slots = 1};
  spec.height = spec.width = 8;
  spec.shuffle = false;
  constexpr int kJobs = 16;
  std::vector<std::string> ids;
  for (int i = 0; i < kJobs; ++i) {
    auto job = client->CreateJob(spec);
    ASSERT_TRUE(job.ok()) << job.status();
    ids.push_back(job->id);
  }
  // Each job decodes its one slot: 64 failures with a ~4 KiB path each.
  ASSERT_TRUE(testing::Eventually([&] {
    for (const std::string& id : ids) {
      auto stats = testing::JobStatsOf(*client, id);
      if (!stats || stats->errors.size() < 64) return false;
    }
    return true;
  })) <<
      [&] {
        auto stats = testing::JobStatsOf(*client, ids.back());
        return stats ? absl::StrCat(stats->errors.size(), " errors, ",
                                    stats->decode_errors, " decode errors, ",
                                    stats->samples_decoded, " decoded")
                     : std::string("no stats");
      }();
  auto stub = DefaultStub(daemon.target());
  v1::Stats stats;
  const grpc::Status status = Call([&](auto* c) {
    return stub->GetStats(c, v1::GetStatsRequest(), &stats);
  });
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(stats.jobs_size(), kJobs);
  const v1::SampleError& first = stats.jobs(0).errors(0);
  EXPECT_LE(first.path().size(), 512u);
  EXPECT_LE(first.reason().size(), 512u);
  EXPECT_NE(first.path().find("..."), std::string::npos) << first.path();
  EXPECT_TRUE(first.path().ends_with(".jpg")) << first.path();
  for (const char* command : {"status", "jobs"}) {
    const testing::CommandRun run = testing::RunCommand(
        absl::StrCat(STOKERCTL_PATH, " --socket=", daemon.target(), " ",
                     command),
        daemon.dir());
    EXPECT_EQ(run.exit_code, 0) << command << ": " << run.all();
  }
}

// One user's jobs hold at most --max_index_per_user of dataset indexes, an
// index their jobs share counted once; the refusal gives the numbers.
TEST(BoundedResponses, OneUsersIndexesAreBoundedSharedOnesCountedOnce) {
  testdata::TempDir dir("stoker-index-bound");
  testing::MakeDataset(dir.path() + "/a", 2, 50, 32, 24);
  testing::MakeDataset(dir.path() + "/b", 2, 50, 32, 24);
  JobSpec spec{.batch_size = 2, .slots = 1};
  spec.height = spec.width = 8;
  auto on = [&](const std::string& name) {
    JobSpec s = spec;
    s.dataset_path = dir.path() + "/" + name;
    return s;
  };
  uint64_t one = 0;
  {
    TestDaemon measure;
    auto job = measure.Connect()->CreateJob(on("a"));
    ASSERT_TRUE(job.ok()) << job.status();
    one = job->index_bytes;
  }
  ASSERT_GT(one, 0u);
  DaemonOptions options;
  options.max_index_bytes_per_user = one * 3 / 2;  // one index, not two
  TestDaemon daemon(options);
  auto client = daemon.Connect();
  auto first = client->CreateJob(on("a"));
  ASSERT_TRUE(first.ok()) << first.status();
  auto shared = client->CreateJob(on("a"));  // the same index
  ASSERT_TRUE(shared.ok()) << shared.status();
  auto other = client->CreateJob(on("b"));
  ASSERT_EQ(other.status().code(), absl::StatusCode::kResourceExhausted)
      << other.status();
  EXPECT_NE(other.status().message().find("--max_index_per_user"),
            std::string::npos)
      << other.status();
  ASSERT_TRUE(client->DeleteJob(first->id).ok());
  ASSERT_TRUE(client->DeleteJob(shared->id).ok());
  EXPECT_TRUE(testing::Eventually([&] {
    auto job = client->CreateJob(on("b"));
    return job.ok();
  }));
}

}  // namespace
}  // namespace stoker
