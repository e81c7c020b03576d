// The C ABI (stoker/stoker_c.h) under misuse, against a real daemon: a
// handle closed twice, used after close or passed as another kind gets an
// error code, never undefined behaviour; timeouts saturate.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
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

  // Connects, creates a job of `spec` and attaches to it (fatal failures
  // end the test).
  void Open(const std::string& spec, stoker_client** client,
            stoker_consumer** consumer) {
    ASSERT_EQ(stoker_connect(daemon_.target().c_str(), 5000, client), 0);
    char* job = nullptr;
    ASSERT_EQ(stoker_create_job(*client, spec.c_str(), &job), 0)
        << stoker_last_error();
    const std::string id = IdOf(job);
    stoker_free(job);
    ASSERT_EQ(stoker_attach(*client, id.c_str(), nullptr, consumer), 0)
        << stoker_last_error();
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
  stoker_batch_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &info), 0)
      << stoker_last_error();

  // A handle of another kind, as a careless binding might pass it.
  char* out = nullptr;
  EXPECT_EQ(stoker_list_jobs(reinterpret_cast<stoker_client*>(consumer), &out),
            STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(stoker_last_error()).find("not a live stoker_client"),
            std::string::npos)
      << stoker_last_error();
  EXPECT_EQ(
      stoker_next(reinterpret_cast<stoker_consumer*>(batch), 0, &batch, &info),
      STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(stoker_cuda_drain(reinterpret_cast<stoker_cuda_copier*>(client)),
            STOKER_STATUS_INVALID_ARGUMENT);
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
  EXPECT_EQ(stoker_batch_check_intact(batch), STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(stoker_last_error()).find("closed already"),
            std::string::npos);

  // Closed twice, used after close.
  stoker_consumer_close(consumer);
  stoker_consumer_close(consumer);
  uint64_t epoch = 0, index = 0;
  EXPECT_EQ(stoker_consumer_position(consumer, &epoch, &index),
            STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(stoker_next(consumer, 0, &batch, &info),
            STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(stoker_delete_job(client, id.c_str()), 0) << stoker_last_error();
  stoker_client_close(client);
  stoker_client_close(client);
  EXPECT_EQ(stoker_get_stats(client, &out), STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(stoker_delete_job(client, id.c_str()),
            STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(stoker_list_jobs(nullptr, &out), STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(stoker_last_error()).find("is NULL"),
            std::string::npos);
}

// stoker_cuda_copy_async takes the batch over whatever it returns: with a
// NULL copier the batch is released at once (it was kept, and a ring of
// two slots stalled at the third stoker_next, timing out).
TEST_F(CAbiTest, CopyAsyncTakesTheBatchOverEvenWithoutACopier) {
  std::string spec = JobJson();
  const std::string one_epoch = "\"epochs\": 1";
  spec.replace(spec.find(one_epoch), one_epoch.size(), "\"epochs\": 3");
  stoker_client* client = nullptr;
  stoker_consumer* consumer = nullptr;
  ASSERT_NO_FATAL_FAILURE(Open(spec, &client, &consumer));
  char scratch[8];
  for (int i = 0; i < 5; ++i) {  // more batches than the ring's two slots
    stoker_batch* batch = nullptr;
    stoker_batch_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(stoker_next(consumer, 10000, &batch, &info), 0)
        << "batch " << i << ": " << stoker_last_error();
    EXPECT_EQ(stoker_cuda_copy_async(nullptr, batch, scratch, nullptr, nullptr),
              STOKER_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(stoker_batch_check_intact(batch), STOKER_STATUS_INVALID_ARGUMENT)
        << "the batch is still the caller's";
  }
  stoker_consumer_close(consumer);
  stoker_client_close(client);
}

// In a child forked after the parent connected, the parent's handles are
// refused (FAILED_PRECONDITION, saying fork) and closing them only forgets
// them; connecting is refused the same way (gRPC does not survive fork: a
// child used to hang in it, or abort destroying the parent's consumer).
// The parent's consumer goes on.
TEST_F(CAbiTest, AForkedChildLeavesItsParentsHandlesAlone) {
  stoker_client* client = nullptr;
  stoker_consumer* consumer = nullptr;
  ASSERT_NO_FATAL_FAILURE(Open(JobJson(), &client, &consumer));
  stoker_batch* batch = nullptr;
  stoker_batch_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &info), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // Any failed expectation here is the exit status's.
    int failures = 0;
    stoker_batch* other = nullptr;
    failures += stoker_next(consumer, 0, &other, &info) !=
                STOKER_STATUS_FAILED_PRECONDITION;
    failures +=
        std::string(stoker_last_error()).find("forked") == std::string::npos;
    char* out = nullptr;
    failures +=
        stoker_list_jobs(client, &out) != STOKER_STATUS_FAILED_PRECONDITION;
    stoker_client* fresh = nullptr;
    failures += stoker_connect(daemon_.target().c_str(), 1000, &fresh) !=
                STOKER_STATUS_FAILED_PRECONDITION;
    stoker_batch_release(batch);
    stoker_consumer_close(consumer);
    stoker_client_close(client);
    ::_exit(failures);
  }
  ASSERT_GT(child, 0);
  int status = -1;
  for (int i = 0; i < 1000; ++i) {  // up to 10 s
    if (::waitpid(child, &status, WNOHANG) == child) break;
    ::usleep(10000);
  }
  if (!WIFEXITED(status)) ::kill(child, SIGKILL);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung or died";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "failed expectations in the child";
  // The parent's handles all still work.
  EXPECT_EQ(stoker_batch_check_intact(batch), 0) << stoker_last_error();
  stoker_batch_release(batch);
  EXPECT_EQ(stoker_next(consumer, 10000, &batch, &info), 0)
      << stoker_last_error();
  stoker_batch_release(batch);
  stoker_consumer_close(consumer);
  stoker_client_close(client);
}

// Every struct's struct_size is checked: too small (a caller that left it
// 0) is INVALID_ARGUMENT naming the field, and a larger struct (a caller
// built against a later header) gets only the bytes this library knows.
TEST_F(CAbiTest, StructSizesAreCheckedAndBoundWhatIsWritten) {
  stoker_client* client = nullptr;
  ASSERT_EQ(stoker_connect(daemon_.target().c_str(), 5000, &client),
            STOKER_STATUS_OK);
  char* job = nullptr;
  ASSERT_EQ(stoker_create_job(client, JobJson().c_str(), &job),
            STOKER_STATUS_OK)
      << stoker_last_error();
  const std::string id = IdOf(job);
  stoker_free(job);
  stoker_consumer_options options{};
  stoker_consumer* consumer = nullptr;
  EXPECT_EQ(stoker_attach(client, id.c_str(), &options, &consumer),
            STOKER_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(stoker_last_error())
                .find("stoker_consumer_options.struct_size is 0"),
            std::string::npos)
      << stoker_last_error();
  options.struct_size = sizeof(options);
  options.name = "sized";
  ASSERT_EQ(stoker_attach(client, id.c_str(), &options, &consumer),
            STOKER_STATUS_OK)
      << stoker_last_error();

  struct {
    stoker_batch_info info;
    unsigned char later[16];
  } grown;
  std::memset(&grown, 0xAB, sizeof(grown));
  grown.info.struct_size = sizeof(grown);
  stoker_batch* batch = nullptr;
  // ABI 2's struct ended with `index`: one that ends before it is refused.
  stoker_batch_info small{};
  small.struct_size = offsetof(stoker_batch_info, index);
  EXPECT_EQ(stoker_next(consumer, 10000, &batch, &small),
            STOKER_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &grown.info), STOKER_STATUS_OK)
      << stoker_last_error();
  EXPECT_EQ(grown.info.struct_size, sizeof(grown));
  EXPECT_EQ(grown.info.size, 4u);
  EXPECT_EQ(grown.info.dtype, STOKER_DTYPE_UINT8);
  EXPECT_EQ(grown.info.layout, STOKER_LAYOUT_NHWC);
  EXPECT_EQ(grown.info.field_count, 2u);  // images, labels
  for (unsigned char byte : grown.later) EXPECT_EQ(byte, 0xAB);
  stoker_batch_release(batch);
  // A caller built for ABI 2 (no field_count) gets its struct and no more.
  stoker_batch_info v2;
  std::memset(&v2, 0xAB, sizeof(v2));
  v2.struct_size = offsetof(stoker_batch_info, field_count);
  ASSERT_EQ(stoker_next(consumer, 10000, &batch, &v2), STOKER_STATUS_OK)
      << stoker_last_error();
  EXPECT_EQ(v2.size, 4u);
  EXPECT_EQ(v2.field_count, 0xABABABABu);
  stoker_batch_release(batch);

  stoker_input_stats stats{};
  EXPECT_EQ(stoker_consumer_input_stats(consumer, &stats),
            STOKER_STATUS_INVALID_ARGUMENT);
  stats.struct_size = sizeof(stats);
  EXPECT_EQ(stoker_consumer_input_stats(consumer, &stats), STOKER_STATUS_OK);
  EXPECT_EQ(stats.batches, 2u);
  stoker_consumer_close(consumer);
  EXPECT_EQ(stoker_delete_job(client, id.c_str()), STOKER_STATUS_OK);
  stoker_client_close(client);
}

}  // namespace
}  // namespace stoker
