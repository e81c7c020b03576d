#include "client/stokerctl/commands.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/stokerctl/connection.h"
#include "client/stokerctl/format.h"
#include "google/protobuf/util/json_util.h"

namespace stoker::ctl {
namespace {

std::string Json(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

// Fetches the stats; on failure prints the sentence and returns false.
bool FetchStats(Connection& connection, v1::Stats* stats) {
  const grpc::Status status = connection.loader().GetStats(
      Connection::Context().get(), v1::GetStatsRequest(), stats);
  if (!status.ok()) {
    std::fprintf(stderr, "stokerctl: %s\n",
                 connection.Explain(status, "read stokerd's stats").c_str());
    return false;
  }
  return true;
}

std::string HealthOf(Connection& connection) {
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = connection.health().Check(
      Connection::Context().get(), grpc::health::v1::HealthCheckRequest(),
      &response);
  if (!status.ok()) return "unknown";
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
      response.status());
}

std::string StatusText(const v1::Stats& stats, const std::string& health,
                       const std::string& target) {
  const v1::DaemonStats& d = stats.daemon();
  const std::string budget =
      d.shm_budget_bytes() > 0
          ? absl::StrCat(" of a ", Bytes(d.shm_budget_bytes()), " budget")
          : std::string(" (no budget)");
  return Table({
      {"stokerd", absl::StrCat(d.version(), " at ", target, ", up ",
                               Duration(d.uptime_ms()), ", ", health)},
      {"workers",
       absl::StrCat(d.workers(), ", ", Percent(d.worker_busy_percent()),
                    " busy, ", Rate(d.decoded_per_second()),
                    " images/s decoded")},
      {"jobs", absl::StrCat(stats.jobs_size(), " visible to you")},
      {"memory", absl::StrCat(Bytes(d.rss_bytes()), " resident; rings ",
                              Bytes(d.shm_bytes()), budget, ", ",
                              Bytes(d.shm_free_bytes()), " free in /dev/shm")},
      {"decoded", absl::StrCat(d.samples_decoded(), " images, ",
                               d.decode_errors(), " errors")},
      {"indexes", absl::StrCat(d.dataset_indexes(), " of datasets, ",
                               Bytes(d.dataset_index_bytes()),
                               " (one per dataset, shared by its jobs)")},
  });
}

double InputBound(const v1::JobStats& job) {
  double worst = -1;
  for (const v1::ConsumerStats& c : job.consumer()) {
    worst = std::max(worst, c.recent_input_bound_percent());
  }
  return worst;
}

std::string JobsText(const v1::Stats& stats) {
  if (stats.jobs().empty()) return "no jobs\n";
  std::vector<std::vector<std::string>> rows = {
      {"JOB", "NAME", "STATE", "MODE", "CONSUMERS", "IMAGES/S", "RING",
       "INPUT-BOUND", "ERRORS"}};
  for (const v1::JobStats& job : stats.jobs()) {
    std::string state = v1::JobState_Name(job.state());
    if (state.starts_with("JOB_STATE_")) state = state.substr(10);
    std::string mode = v1::ConsumerMode_Name(job.mode());
    if (mode.starts_with("CONSUMER_MODE_")) mode = mode.substr(14);
    if (mode == "UNSPECIFIED") mode = "EXCLUSIVE";
    rows.push_back(
        {job.job_id(), job.name().empty() ? "-" : job.name(),
         absl::AsciiStrToLower(state), absl::AsciiStrToLower(mode),
         absl::StrCat(job.consumers()), Rate(job.delivered_per_second()),
         absl::StrCat(Percent(job.ring_occupancy_percent()), " of ",
                      job.slots()),
         Percent(InputBound(job)), absl::StrCat(job.decode_errors())});
  }
  std::string out = Table(rows);
  for (const v1::JobStats& job : stats.jobs()) {
    for (const v1::SampleError& error : job.errors()) {
      absl::StrAppend(&out, job.job_id(), ": ", error.path(), ": ",
                      error.reason(), "\n");
    }
  }
  return out;
}

}  // namespace

int Status(const Options& options) {
  Connection connection(options.target);
  v1::Stats stats;
  if (!FetchStats(connection, &stats)) return 1;
  const std::string health = HealthOf(connection);
  if (options.json) {
    std::printf("{\"health\":\"%s\",\"daemon\":%s}\n", health.c_str(),
                Json(stats.daemon()).c_str());
  } else {
    std::fputs(StatusText(stats, health, options.target).c_str(), stdout);
  }
  return 0;
}

int Jobs(const Options& options) {
  Connection connection(options.target);
  v1::Stats stats;
  if (!FetchStats(connection, &stats)) return 1;
  if (options.json) {
    v1::Stats jobs_only;
    *jobs_only.mutable_jobs() = stats.jobs();
    std::printf("%s\n", Json(jobs_only).c_str());
  } else {
    std::fputs(JobsText(stats).c_str(), stdout);
  }
  return 0;
}

int Top(const Options& options) {
  Connection connection(options.target);
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  for (int i = 0; options.iterations == 0 || i < options.iterations; ++i) {
    if (i > 0) absl::SleepFor(options.interval);
    v1::Stats stats;
    if (!FetchStats(connection, &stats)) return 1;
    if (options.json) {
      std::printf("%s\n", Json(stats).c_str());  // one object per line
    } else {
      // Home and clear on a terminal; plain frames one after another else.
      std::printf(
          "%s%s\n%s", terminal ? "\033[H\033[2J" : "",
          StatusText(stats, HealthOf(connection), options.target).c_str(),
          JobsText(stats).c_str());
      if (!terminal) std::printf("\n");
    }
    std::fflush(stdout);
  }
  return 0;
}

int DeleteJob(const Options& options, const std::string& job_id) {
  Connection connection(options.target);
  v1::DeleteJobRequest request;
  request.set_job_id(job_id);
  v1::DeleteJobResponse response;
  const grpc::Status status = connection.loader().DeleteJob(
      Connection::Context().get(), request, &response);
  if (!status.ok()) {
    std::fprintf(stderr, "stokerctl: %s\n",
                 connection.Explain(status, "delete job " + job_id).c_str());
    return 1;
  }
  if (options.json) {
    std::printf("{\"deleted\":\"%s\"}\n", job_id.c_str());
  } else {
    std::printf("deleted job %s\n", job_id.c_str());
  }
  return 0;
}

}  // namespace stoker::ctl
