// What an operator touches on a running daemon: reloading settings, the
// Prometheus endpoint and the gRPC health service.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "common/log.h"
#include "common/unique_fd.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testing::MakeDataset;
using testing::TestDaemon;

// One HTTP/1.0 GET to 127.0.0.1:port; the whole response, headers included.
std::string HttpGet(int port, const std::string& path) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address),
                sizeof(address)) != 0) {
    return "";
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\n\r\n";
  (void)!::write(fd.get(), request.data(), request.size());
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buffer, sizeof(buffer))) > 0)
    response.append(buffer, n);
  return response;
}

// The value of the sample line starting with `series` ("name{labels}").
std::optional<double> Sample(const std::string& text,
                             const std::string& series) {
  size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      return std::stod(text.substr(at + series.size() + 1));
    }
    at += series.size();
  }
  return std::nullopt;
}

JobSpec SmallSpec(const std::string& root, const std::string& name = "") {
  return {.dataset_path = root,
          .batch_size = 4,
          .slots = 2,
          .height = 16,
          .width = 16,
          .epochs = 0,
          .name = name};
}

TEST(ReloadTest, LimitsChangeAtRunTimeAndTheSocketDoesNot) {
  TestDaemon daemon;
  auto client = daemon.Connect();
  MakeDataset(daemon.dir() + "/data", 2, 4);
  ASSERT_TRUE(client->CreateJob(SmallSpec(daemon.dir() + "/data")).ok());

  DaemonOptions next;
  next.target = "unix:///elsewhere/stoker.sock";
  next.workers = 2;  // unchanged (TestDaemon's)
  next.max_jobs = 1;
  next.max_leases_per_user = 8;
  next.lease_timeout = absl::Seconds(30);
  next.log_level = "warn";
  const ReloadReport report = daemon.daemon().Reconfigure(next);
  EXPECT_EQ(report.applied,
            (std::vector<std::string>{
                "max_jobs: 64 -> 1", "max_leases_per_user: 256 -> 8",
                "lease_timeout: 10m -> 30s", "log_level: info -> warn"}));
  ASSERT_EQ(report.refused.size(), 1u);
  EXPECT_NE(report.refused[0].find("socket cannot change while stokerd runs"),
            std::string::npos)
      << report.refused[0];
  spdlog::default_logger()->set_level(spdlog::level::info);

  // The new job limit holds; the socket still serves.
  auto second = client->CreateJob(SmallSpec(daemon.dir() + "/data"));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("--max_jobs=1"), std::string::npos)
      << second.status();
  // A second reload with the same settings changes nothing.
  next.target = daemon.target();
  const ReloadReport again = daemon.daemon().Reconfigure(next);
  EXPECT_TRUE(again.applied.empty());
  EXPECT_TRUE(again.refused.empty());
}

TEST(ReloadTest, DatasetRootsChangeAndAMissingRootKeepsTheOldOnes) {
  TestDaemon daemon({.workers = 1, .dataset_roots = {"/"}});
  auto client = daemon.Connect();
  const std::string data = daemon.dir() + "/data";
  MakeDataset(data, 2, 4);
  std::filesystem::create_directory(daemon.dir() + "/other");

  DaemonOptions next{.workers = 1};
  next.target = daemon.target();
  next.dataset_roots = {daemon.dir() + "/other"};
  ReloadReport report = daemon.daemon().Reconfigure(next);
  ASSERT_EQ(report.applied.size(), 1u);
  EXPECT_TRUE(report.refused.empty());
  auto refused = client->CreateJob(SmallSpec(data));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied)
      << refused.status();

  next.dataset_roots = {daemon.dir() + "/missing"};
  report = daemon.daemon().Reconfigure(next);
  EXPECT_TRUE(report.applied.empty());
  ASSERT_EQ(report.refused.size(), 1u);
  EXPECT_NE(report.refused[0].find("missing"), std::string::npos)
      << report.refused[0];

  next.dataset_roots = {daemon.dir()};
  report = daemon.daemon().Reconfigure(next);
  EXPECT_EQ(report.applied.size(), 1u);
  EXPECT_TRUE(client->CreateJob(SmallSpec(data)).ok());
}

TEST(MetricsTest, ScrapeShowsDaemonAndPerJobSeries) {
  TestDaemon daemon({.workers = 1, .metrics_address = "127.0.0.1:0"});
  const int port = daemon.daemon().metrics_port();
  ASSERT_GT(port, 0);
  auto client = daemon.Connect();
  MakeDataset(daemon.dir() + "/data", 2, 6);
  auto job =
      client->CreateJob(SmallSpec(daemon.dir() + "/data", "resnet \"a\""));
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = client->Attach(job->id);
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  for (int i = 0; i < 3; ++i) {
    auto batch = (*consumer)->Next();
    ASSERT_TRUE(batch.ok()) << batch.status();
  }
  // Ids only by default: job names are their users' business.
  const std::string labels = "{job_id=\"" + job->id + "\"}";
  std::string response;
  // Releases travel to the daemon asynchronously.
  ASSERT_TRUE(testing::Eventually([&] {
    response = HttpGet(port, "/metrics");
    return Sample(response, "stoker_job_batches_released_total" + labels) ==
           3.0;
  })) << response;
  EXPECT_NE(response.find(" 200 OK\r\n"), std::string::npos) << response;
  EXPECT_NE(response.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(response.find("# TYPE stoker_samples_decoded_total counter"),
            std::string::npos);
  EXPECT_EQ(Sample(response, "stoker_workers"), 1.0);
  EXPECT_EQ(Sample(response, "stoker_jobs"), 1.0);
  EXPECT_GE(Sample(response, "stoker_job_batches_delivered_total" + labels)
                .value_or(0),
            3.0);
  EXPECT_GE(
      Sample(response, "stoker_job_samples_decoded_total" + labels).value_or(0),
      12.0);
  EXPECT_EQ(Sample(response, "stoker_job_ring_slots" + labels), 2.0);
  EXPECT_EQ(Sample(response, "stoker_job_consumers" + labels), 1.0);
  // At least the pixels of 3 batches of 4 16x16 RGB images.
  EXPECT_GT(
      Sample(response, "stoker_job_delivered_bytes_total" + labels).value_or(0),
      3.0 * 4 * 16 * 16 * 3);
  EXPECT_EQ(Sample(response, "stoker_decode_errors_total"), 0.0);
  EXPECT_TRUE(Sample(response, "stoker_shm_bytes").value_or(0) > 0);

  EXPECT_NE(HttpGet(port, "/other").find("404"), std::string::npos);
  EXPECT_EQ(response.find("resnet"), std::string::npos)
      << "a job's name reached the metrics: " << response;
}

TEST(MetricsTest, NamesOnlyWhereTheOperatorAsks) {
  TestDaemon daemon(
      {.workers = 1, .metrics_address = "127.0.0.1:0", .metrics_names = true});
  auto client = daemon.Connect();
  MakeDataset(daemon.dir() + "/data", 2, 6);
  auto job =
      client->CreateJob(SmallSpec(daemon.dir() + "/data", "resnet \"a\""));
  ASSERT_TRUE(job.ok()) << job.status();
  const std::string response =
      HttpGet(daemon.daemon().metrics_port(), "/metrics");
  EXPECT_EQ(Sample(response, "stoker_job_ring_slots{job_id=\"" + job->id +
                                 "\",job=\"resnet \\\"a\\\"\"}"),
            2.0)
      << response;
}

TEST(MetricsTest, ABusyPortIsAClearStartError) {
  TestDaemon first({.workers = 1, .metrics_address = "127.0.0.1:0"});
  testdata::TempDir dir("stoker-metrics");
  DaemonOptions options{.workers = 1};
  options.target = testing::SocketTarget(dir.path());
  options.metrics_address =
      "127.0.0.1:" + std::to_string(first.daemon().metrics_port());
  auto second = Daemon::Start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("metrics_address 127.0.0.1:"),
            std::string::npos)
      << second.status();
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/stoker.sock"));
}

// Ring pages are charged to stokerd's cgroup: the budget in force is at
// most what its memory limit leaves, and a job past it is refused, naming
// both, instead of the daemon being OOM-killed.
TEST(BudgetTest, TheCgroupMemoryLimitCapsTheSharedMemoryBudget) {
  TestDaemon daemon({.workers = 1,
                     .shm_budget_bytes = uint64_t{1} << 30,
                     .memory_limit = uint64_t{256} << 20});
  auto client = daemon.Connect();
  MakeDataset(daemon.dir() + "/data", 2, 4);
  auto stats = client->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->shm_budget_bytes, uint64_t{192} << 20);  // 256M - 64M
  JobSpec big = SmallSpec(daemon.dir() + "/data");
  big.batch_size = 64;
  big.height = big.width = 224;  // 24 slots of 9.6 MB: 231 MB
  big.slots = 24;
  auto refused = client->CreateJob(big);
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find(
                "--shm_budget, lowered to what the memory limit of stokerd's "
                "cgroup"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(client->CreateJob(SmallSpec(daemon.dir() + "/data")).ok());
}

TEST(HealthTest, TheStandardHealthServiceAnswersServing) {
  TestDaemon daemon({.workers = 1});
  auto channel =
      grpc::CreateChannel(daemon.target(), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  const grpc::Status status = health->Check(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  grpc::ClientContext unknown_context;
  request.set_service("no.such.Service");
  const grpc::Status unknown =
      health->Check(&unknown_context, request, &response);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace stoker
