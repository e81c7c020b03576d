// The C ABI (stoker/stoker_c.h) under misuse, against a real daemon: a
// handle closed twice, used after close or passed as another kind gets an
// error code, never undefined behaviour; timeouts saturate.
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "stoker/stoker_c.h"
#include "tests/test_util.h"

namespace stoker {
namespace {

class CAbiTest : public ::testing::Test {
 protected:
  CAbiTest() {
    testing::MakeDataset(daemon_.dir() + "/data", 2, 4, 32, 24,
                         /*vary_size=*/false);
  }
  std::string JobJson() const {
    return R"({"dataset": {"path": ")" + daemon_.dir() +
           R"(/data"}, "batch_size": 4, "slots": 2, "epochs": 1,
               "output": {"height": 24, "width": 32}})";
  }
  // The job's id, parsed from the Job JSON (its first "id").
  static std::string IdOf(const char* job_json) {
    const std::string json = job_json;
    const size_t at = json.find("\"id\":\"");
    return json.substr(at + 6, json.find('"', at + 6) - at - 6);
  }

  testing::TestDaemon daemon_;
};

TEST_F(CAbiTest, ConnectWithNoDeadlineReachesTheDaemon) {
  stoker_client* client = nullptr;
  // INT64_MAX used to overflow the deadline and fail at once.
  ASSERT_EQ(stoker_connect(daemon_.target().c_str(), INT64_MAX, &client), 0)
      << stoker_last_error();
  char* jobs = nullptr;
  EXPECT_EQ(stoker_list_jobs(client, &jobs), 0) << stoker_last_error();
  stoker_free(jobs);
  stoker_client_close(client);
}

TEST_F(CAbiTest, ClosedAndMistypedHandlesGetAnErrorCode) {
  stoker_client* client = nullptr;
  ASSERT_EQ(stoker_connect(daemon_.target().c_str(), 5000, &client), 0);
  char* job = nullptr;
  ASSERT_EQ(stoker_create_job(client, JobJson().c_str(), &job), 0)
      << stoker_last_error();
  const std::string id = IdOf(job);
  stoker_free(job);
  stoker_consumer* consumer = nullptr;
  ASSERT_EQ(stoker_attach(client, id.c_str(), nullptr, &consumer), 0)
      << stoker_last_error();
  stoker_batch* batch = nullptr;
  stoker_batch_info info;
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &info), 0)
      << stoker_last_error();

  // A handle of another kind, as a careless binding might pass it.
  char* out = nullptr;
  EXPECT_EQ(stoker_list_jobs(reinterpret_cast<stoker_client*>(consumer), &out),
            3);
  EXPECT_NE(std::string(stoker_last_error()).find("not a live stoker_client"),
            std::string::npos)
      << stoker_last_error();
  EXPECT_EQ(
      stoker_next(reinterpret_cast<stoker_consumer*>(batch), 0, &batch, &info),
      3);
  EXPECT_EQ(stoker_cuda_drain(reinterpret_cast<stoker_cuda_copier*>(client)),
            3);
  EXPECT_EQ(stoker_cuda_copier_pinned(
                reinterpret_cast<stoker_cuda_copier*>(consumer)),
            0);
  // Closing a handle as another kind does nothing: both still work.
  stoker_client_close(reinterpret_cast<stoker_client*>(consumer));
  stoker_consumer_close(reinterpret_cast<stoker_consumer*>(client));
  EXPECT_EQ(stoker_batch_check_intact(batch), 0) << stoker_last_error();

  // Released twice, used after release.
  stoker_batch_release(batch);
  stoker_batch_release(batch);
  EXPECT_EQ(stoker_batch_check_intact(batch), 3);
  EXPECT_NE(std::string(stoker_last_error()).find("closed already"),
            std::string::npos);

  // Closed twice, used after close.
  stoker_consumer_close(consumer);
  stoker_consumer_close(consumer);
  uint64_t epoch = 0, index = 0;
  EXPECT_EQ(stoker_consumer_position(consumer, &epoch, &index), 3);
  EXPECT_EQ(stoker_next(consumer, 0, &batch, &info), 3);
  EXPECT_EQ(stoker_delete_job(client, id.c_str()), 0) << stoker_last_error();
  stoker_client_close(client);
  stoker_client_close(client);
  EXPECT_EQ(stoker_get_stats(client, &out), 3);
  EXPECT_EQ(stoker_delete_job(client, id.c_str()), 3);
  EXPECT_EQ(stoker_list_jobs(nullptr, &out), 3);
  EXPECT_NE(std::string(stoker_last_error()).find("is NULL"),
            std::string::npos);
}

}  // namespace
}  // namespace stoker
