// Isolation: who may reach the daemon and what they may see. Dataset paths
// must resolve inside the allowed roots; sockets and rings carry the modes
// they should; requests are bounded; and a client running as another user
// (a stoker_probe forked as uid 65534) sees only jobs shared with it.
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "common/naming.h"
#include "gtest/gtest.h"
#include "stoker/v1/loader.grpc.pb.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using testdata::Subprocess;
using testing::TestDaemon;

constexpr uid_t kOtherUid = 65534;
constexpr gid_t kOtherGid = 65534;

mode_t ModeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

TEST(Security, DatasetPathsMustResolveInsideTheAllowedRoots) {
  testdata::TempDir dir("stoker-roots");
  const std::string allowed = dir.path() + "/allowed";
  const std::string outside = dir.path() + "/outside";
  testing::MakeDataset(allowed + "/imagenet", 2, 3, 32, 24);
  testing::MakeDataset(outside + "/secret", 2, 3, 32, 24);
  fs::create_directory_symlink(outside + "/secret", allowed + "/link");
  TestDaemon daemon({.dataset_roots = {allowed}});
  auto client = daemon.Connect();
  auto create = [&](const std::string& path) {
    return client
        ->CreateJob({.dataset_path = path,
                     .batch_size = 2,
                     .slots = 2,
                     .height = 8,
                     .width = 8})
        .status();
  };
  EXPECT_TRUE(create(allowed + "/imagenet").ok());
  for (const std::string& path :
       {outside + "/secret", allowed + "/../outside/secret", allowed + "/link",
        std::string("/proc/self"), std::string("/")}) {
    const absl::Status status = create(path);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied)
        << path << ": " << status;
    EXPECT_NE(status.message().find("--dataset_roots"), std::string::npos)
        << status;
  }
  EXPECT_EQ(create(allowed + "/missing").code(), absl::StatusCode::kNotFound);
}

TEST(Security, PseudoFileSystemsAreRefusedEvenWithoutRoots) {
  TestDaemon daemon;
  auto client = daemon.Connect();
  for (const char* path : {"/proc/self", "/sys", "/dev"}) {
    EXPECT_EQ(client
                  ->CreateJob({.dataset_path = path,
                               .batch_size = 2,
                               .slots = 2,
                               .height = 8,
                               .width = 8})
                  .status()
                  .code(),
              absl::StatusCode::kPermissionDenied)
        << path;
  }
}

TEST(Security, ASampleSymlinkedOutsideTheRootsIsRefusedAndReplaced) {
  testdata::TempDir dir("stoker-roots");
  const std::string allowed = dir.path() + "/allowed";
  auto dataset = testing::MakeDataset(allowed + "/data", 1, 4, 32, 24);
  testing::MakeDataset(dir.path() + "/outside", 1, 1, 32, 24);
  const std::string escapee = dataset.paths.front();
  fs::remove(escapee);
  fs::create_symlink(dir.path() + "/outside/class_000/img_00000.jpg", escapee);
  ASSERT_TRUE(fs::exists(escapee)) << "the symlink should resolve";
  TestDaemon daemon({.dataset_roots = {allowed}});
  auto client = daemon.Connect();
  auto job = client->CreateJob({.dataset_path = allowed + "/data",
                                .batch_size = 4,
                                .slots = 2,
                                .height = 8,
                                .width = 8,
                                .shuffle = false});
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = client->Attach(job->id);
  auto batch = (*consumer)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto stats = testing::JobStatsOf(*client, job->id);
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->decode_errors, 1u);
  ASSERT_FALSE(stats->errors.empty());
  EXPECT_EQ(stats->errors[0].path, escapee);
  EXPECT_NE(stats->errors[0].reason.find("outside the allowed dataset roots"),
            std::string::npos)
      << stats->errors[0].reason;
}

TEST(Security, SocketsAre0660AndRingsAreOnlyTheDaemons) {
  TestDaemon daemon;
  const std::string socket = SocketPathFromTarget(daemon.target());
  EXPECT_EQ(ModeOf(socket), 0660u);
  EXPECT_EQ(ModeOf(RingSocketPath(socket)), 0660u);
  auto client = daemon.Connect();
  testing::MakeDataset(daemon.dir() + "/data", 1, 2, 32, 24);
  auto job = client->CreateJob({.dataset_path = daemon.dir() + "/data",
                                .batch_size = 2,
                                .slots = 2,
                                .height = 8,
                                .width = 8});
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(ModeOf("/dev/shm/" + job->segment_name), 0600u);
  EXPECT_EQ(job->owner_uid, ::geteuid());
  const absl::Status unknown_group =
      client
          ->CreateJob({.dataset_path = daemon.dir() + "/data",
                       .batch_size = 2,
                       .slots = 2,
                       .height = 8,
                       .width = 8,
                       .access_group = "no-such-group-here"})
          .status();
  EXPECT_EQ(unknown_group.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown_group.message().find("access_group"), std::string::npos)
      << unknown_group;
}

TEST(Security, OversizedRequestsAreRefusedBeforeValidation) {
  TestDaemon daemon;
  auto stub = v1::Loader::NewStub(
      grpc::CreateChannel(daemon.target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  v1::CreateJobRequest request;
  request.mutable_spec()->mutable_dataset()->set_path(
      std::string(1 << 20, 'a'));
  v1::Job job;
  const grpc::Status status = stub->CreateJob(&context, request, &job);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  // The daemon is unharmed.
  auto client = daemon.Connect();
  EXPECT_TRUE(client->GetStats().ok());
}

// Runs stoker_probe as uid/gid 65534 against `daemon`; returns its output.
std::string ProbeAsOtherUser(const TestDaemon& daemon,
                             const std::vector<std::string>& args) {
  // The probe must be reachable by that user: copy it into the daemon's
  // directory, which (like its parent) that user may enter.
  const std::string probe = daemon.dir() + "/stoker_probe";
  fs::copy_file(STOKER_PROBE_PATH, probe, fs::copy_options::overwrite_existing);
  ::chmod(probe.c_str(), 0755);
  const std::string out = daemon.dir() + "/probe.out";
  Subprocess child(probe, args, out, std::make_pair(kOtherUid, kOtherGid));
  const auto status = child.Wait(std::chrono::seconds(60));
  EXPECT_TRUE(status.has_value() && WIFEXITED(*status) &&
              WEXITSTATUS(*status) == 0)
      << testdata::ReadTextFile(out);
  return testdata::ReadTextFile(out);
}

TEST(Security, AnotherUserSeesOnlyJobsSharedWithItsGroup) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "running a client as another user needs root";
  }
  TestDaemon daemon({.socket_group = std::to_string(kOtherGid)});
  ::chmod(daemon.dir().c_str(), 0755);
  if (const std::string closed =
          testing::PathClosedToOthers(daemon.dir() + "/x");
      !closed.empty()) {
    GTEST_SKIP() << closed;
  }
  testing::MakeDataset(daemon.dir() + "/data", 2, 4, 32, 24);
  ::chmod((daemon.dir() + "/data").c_str(), 0755);
  auto client = daemon.Connect();
  JobSpec spec{.dataset_path = daemon.dir() + "/data",
               .batch_size = 2,
               .slots = 2,
               .height = 8,
               .width = 8,
               .shuffle = false};
  auto private_job = client->CreateJob(spec);
  spec.access_group = std::to_string(kOtherGid);
  auto shared_job = client->CreateJob(spec);
  ASSERT_TRUE(private_job.ok() && shared_job.ok());

  const std::string out =
      ProbeAsOtherUser(daemon, {"probe", "--target=" + daemon.target(),
                                "--private_job=" + private_job->id,
                                "--shared_job=" + shared_job->id,
                                "--segment=" + private_job->segment_name,
                                "--dataset=" + daemon.dir() + "/data"});
  auto has = [&](const std::string& line) {
    return out.find(line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("connect OK")) << out;
  // The private job: invisible and untouchable by every route.
  EXPECT_FALSE(has("listed " + private_job->id)) << out;
  EXPECT_FALSE(has("stats " + private_job->id)) << out;
  EXPECT_TRUE(has("get_private PERMISSION_DENIED")) << out;
  EXPECT_TRUE(has("attach_private PERMISSION_DENIED")) << out;
  EXPECT_TRUE(has("delete_private PERMISSION_DENIED")) << out;
  EXPECT_TRUE(has("ring_private PERMISSION_DENIED")) << out;
  EXPECT_TRUE(has("open_segment_private PERMISSION_DENIED")) << out;
  // The shared one: usable, read-only.
  EXPECT_TRUE(has("listed " + shared_job->id)) << out;
  EXPECT_TRUE(has("get_shared OK")) << out;
  EXPECT_TRUE(has("attach_shared OK")) << out;
  EXPECT_TRUE(has("next_shared OK")) << out;
  EXPECT_TRUE(has("first_index 0")) << out;
  EXPECT_TRUE(has("mprotect_write PERMISSION_DENIED")) << out;
  // Its own job belongs to it; the owner of the others still has them.
  EXPECT_TRUE(has("create_own OK")) << out;
  auto jobs = client->ListJobs();
  ASSERT_TRUE(jobs.ok());
  bool saw_own = false;
  for (const JobInfo& job : *jobs) {
    if (out.find("own_job " + job.id) != std::string::npos) {
      saw_own = true;
      EXPECT_EQ(job.owner_uid, kOtherUid);
    }
  }
  EXPECT_TRUE(saw_own) << "root sees every job";
  EXPECT_TRUE(client->GetJob(private_job->id).ok());
}

}  // namespace
}  // namespace stoker
