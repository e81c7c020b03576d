// stokerctl against a real stokerd: what it prints, its JSON, and the
// sentences it makes of errors.
#include <stdio.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "daemon/datasets/shard_index.h"
#include "daemon/datasets/shard_table.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

using testing::TestDaemon;

using Output = testing::CommandRun;

class StokerctlTest : public ::testing::Test {
 protected:
  StokerctlTest() {
    // One file that is not an image: a decode error with its path.
    broken_ = testing::MakeDataset(daemon_.dir() + "/data", 2, 6).paths[3];
    std::ofstream(broken_, std::ios::trunc) << "not a jpeg";
  }

  Output Stokerctl(const std::string& args) {
    return testing::RunCommand(std::string(STOKERCTL_PATH) +
                                   " --socket=" + daemon_.target() + " " + args,
                               daemon_.dir());
  }

  TestDaemon daemon_{{.workers = 1}};
  std::string broken_;
  std::unique_ptr<Client> client_ = daemon_.Connect();
};

TEST_F(StokerctlTest, StatusShowsVersionHealthAndWorkers) {
  const Output run = Stokerctl("status");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("0.2.0 at " + daemon_.target()), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("SERVING"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("workers  1, "), std::string::npos) << run.out;

  const Output json = Stokerctl("--json status");
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"health\":\"SERVING\""), std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"workers\":1"), std::string::npos) << json.out;
}

TEST_F(StokerctlTest, JobsListsEachJobAndTheFilesThatFailed) {
  JobSpec spec{.dataset_path = daemon_.dir() + "/data",
               .batch_size = 13,
               .slots = 2,
               .height = 8,
               .width = 8,
               .epochs = 0,
               .name = "resnet50"};
  auto job = client_->CreateJob(spec);
  ASSERT_TRUE(job.ok()) << job.status();
  auto consumer = client_->Attach(job->id);
  ASSERT_TRUE(consumer.ok());
  ASSERT_TRUE((*consumer)->Next().ok());  // the whole epoch, broken file too

  const Output run = Stokerctl("jobs");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("JOB"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(job->id + "  resnet50  running  exclusive  1 "),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find(job->id + ": " + broken_ + ": "), std::string::npos)
      << run.out;

  const Output json = Stokerctl("--json jobs");
  EXPECT_NE(json.out.find("\"job_id\":\"" + job->id + "\""), std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"path\":\"" + broken_ + "\""), std::string::npos)
      << json.out;

  const Output top = Stokerctl("top --iterations=2 --interval=100ms");
  EXPECT_EQ(top.exit_code, 0) << top.err;
  size_t frames = 0;
  for (size_t at = 0; (at = top.out.find("SERVING", at)) != std::string::npos;
       ++at) {
    ++frames;
  }
  EXPECT_EQ(frames, 2u) << top.out;
}

TEST_F(StokerctlTest, JobDeleteEndsTheJobAndExplainsAnUnknownOne) {
  auto job = client_->CreateJob({.dataset_path = daemon_.dir() + "/data",
                                 .batch_size = 2,
                                 .slots = 2,
                                 .height = 8,
                                 .width = 8,
                                 .epochs = 0});
  ASSERT_TRUE(job.ok()) << job.status();
  const Output run = Stokerctl("job delete " + job->id);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "deleted job " + job->id + "\n");
  EXPECT_EQ(client_->GetJob(job->id).status().code(),
            absl::StatusCode::kNotFound);

  const Output again = Stokerctl("job delete " + job->id);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "stokerctl: cannot delete job " + job->id +
                           ": job_id '" + job->id + "' not found.\n");
}

TEST_F(StokerctlTest, BenchReportsImagesPerSecondAndCleansUp) {
  const Output run =
      Stokerctl("--json bench --batches=4 --batch_size=3 --size=16 " +
                daemon_.dir() + "/data");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("\"images\":12,\"batches\":4"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("\"images_per_second\":"), std::string::npos);
  EXPECT_TRUE(client_->ListJobs()->empty());  // its job deleted

  const Output missing = Stokerctl("bench " + daemon_.dir() + "/absent");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("stokerctl: cannot start a job on " +
                             daemon_.dir() + "/absent: "),
            std::string::npos)
      << missing.err;
}

// The same bench on the dataset's files as tar shards (made by GNU tar, a
// brace pattern) and as a CSV manifest; the broken file is left out.
TEST_F(StokerctlTest, BenchTakesShardsAndManifests) {
  const testdata::GeneratedDataset data =
      testing::MakeDataset(daemon_.dir() + "/clean", 2, 6);
  std::ofstream manifest(daemon_.dir() + "/list.csv");
  manifest << "path,label\n";
  for (int shard = 0; shard < 2; ++shard) {
    const std::string members =
        daemon_.dir() + "/members" + std::to_string(shard);
    std::filesystem::create_directories(members);
    for (size_t i = shard * 6; i < size_t(shard + 1) * 6; ++i) {
      const std::string key = members + "/" + std::to_string(i);
      std::filesystem::copy_file(data.paths[i], key + ".jpg");
      std::ofstream(key + ".cls") << data.labels[i];
      manifest << data.paths[i] << "," << data.labels[i] << "\n";
    }
    // --sort=name keeps a sample's members together, as WebDataset needs.
    const std::string tar = "tar --sort=name -cf " + daemon_.dir() + "/s-" +
                            std::to_string(shard) + ".tar -C " + members + " .";
    ASSERT_EQ(std::system(tar.c_str()), 0);
  }
  manifest.close();
  for (const std::string& dataset :
       {"'" + daemon_.dir() + "/s-{0..1}.tar'", daemon_.dir() + "/list.csv"}) {
    const Output run = Stokerctl(
        "--json bench --batches=4 --batch_size=3 "
        "--size=16 " +
        dataset);
    EXPECT_EQ(run.exit_code, 0) << dataset << ": " << run.err;
    EXPECT_NE(run.out.find("\"images\":12,\"batches\":4"), std::string::npos)
        << run.out;
  }
  const Output bad = Stokerctl("bench " + daemon_.dir() + "/s-9.tar");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("s-9.tar' does not exist"), std::string::npos)
      << bad.err;
}

// `stokerctl index` against the daemon's own index of the same shards:
// each shard's count is the number of samples the daemon finds in it.
TEST_F(StokerctlTest, IndexCountsEachShardsSamplesAsTheDaemonDoes) {
  std::vector<std::string> shards;
  for (int s = 0; s < 3; ++s) {
    std::vector<std::pair<std::string, std::string>> members;
    for (int i = 0; i < 2 + 3 * s; ++i) {
      members.push_back({absl::StrCat("k", i, ".jpg"), "x"});
      members.push_back({absl::StrCat("k", i, ".cls"), "1"});
    }
    shards.push_back(
        testing::WriteTarShard(daemon_.dir(), absl::StrCat("i", s), members));
  }
  const std::string file = daemon_.dir() + "/stoker-index.tsv";
  const Output run =
      testing::RunCommand(absl::StrCat(STOKERCTL_PATH, " index --output=", file,
                                       " '", daemon_.dir(), "/i{0..2}.tar'"),
                          daemon_.dir());
  ASSERT_EQ(run.exit_code, 0) << run.all();
  EXPECT_NE(run.err.find("3 shards, 15 samples"), std::string::npos) << run.err;
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto parsed = ParseShardIndex(text, file);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << text;
  ASSERT_EQ(parsed->size(), 3u);
  for (int s = 0; s < 3; ++s) {
    auto index = IndexTarShards({shards[s]}, {}, ScanLimits{});
    ASSERT_TRUE(index.ok()) << index.status();
    const ShardInfo& info = parsed->at(shards[s]);
    EXPECT_EQ(info.samples, (*index)->size()) << s;
    EXPECT_EQ(info.size, std::filesystem::file_size(shards[s]));
  }
  // Relative names: the file works once put beside the shards.
  EXPECT_NE(text.find("\ni0.tar\t2\t"), std::string::npos) << text;
  const Output missing = testing::RunCommand(
      absl::StrCat(STOKERCTL_PATH, " index ", daemon_.dir(), "/none.tar"),
      daemon_.dir());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("none.tar: No such file"), std::string::npos)
      << missing.err;
}

TEST_F(StokerctlTest, NoDaemonAndBadUsageAreSentences) {
  const Output nobody =
      Stokerctl("--socket=unix://" + daemon_.dir() + "/absent.sock status");
  EXPECT_EQ(nobody.exit_code, 1);
  EXPECT_NE(nobody.err.find("there is no socket at " + daemon_.dir() +
                            "/absent.sock: stokerd is not running there"),
            std::string::npos)
      << nobody.err;
  EXPECT_EQ(nobody.err.find("grpc"), std::string::npos) << nobody.err;

  const Output usage = Stokerctl("frobnicate");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("unknown command 'frobnicate'"), std::string::npos);
}

}  // namespace
}  // namespace stoker
