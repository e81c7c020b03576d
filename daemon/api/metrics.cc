#include "daemon/api/metrics.h"

#include <civetweb.h>

#include <mutex>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace stoker {
namespace {

// A label value with \, " and newline escaped as the format asks.
std::string Escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    if (ch == '\\' || ch == '"') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (ch == '\n') {
      out.append("\\n");
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

// Writes one metric family: HELP and TYPE once, then its samples.
class Writer {
 public:
  void Family(std::string_view name, std::string_view type,
              std::string_view help) {
    absl::StrAppend(&out_, "# HELP ", std::string(name), " ", std::string(help),
                    "\n# TYPE ", std::string(name), " ", std::string(type),
                    "\n");
  }
  void Sample(std::string_view name, std::string_view labels, double value) {
    absl::StrAppend(&out_, std::string(name), labels.empty() ? "" : "{",
                    std::string(labels), labels.empty() ? "" : "}", " ",
                    absl::StrFormat("%.17g", value), "\n");
  }
  void One(std::string_view name, std::string_view type, std::string_view help,
           double value) {
    Family(name, type, help);
    Sample(name, "", value);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string JobLabels(const v1::JobStats& job, bool names) {
  std::string labels = absl::StrCat("job_id=\"", Escape(job.job_id()), "\"");
  if (names) absl::StrAppend(&labels, ",job=\"", Escape(job.name()), "\"");
  return labels;
}

struct JobSeries {
  const char* name;
  const char* type;
  const char* help;
  double (*value)(const v1::JobStats&);
};

constexpr JobSeries kJobSeries[] = {
    {"stoker_job_samples_decoded_total", "counter",
     "Images decoded for the job.",
     [](const v1::JobStats& j) { return double(j.samples_decoded()); }},
    {"stoker_job_batches_delivered_total", "counter",
     "Batches handed to the job's consumers (k per batch in broadcast to k).",
     [](const v1::JobStats& j) { return double(j.batches_delivered()); }},
    {"stoker_job_batches_released_total", "counter",
     "Batches the job's consumers released.",
     [](const v1::JobStats& j) { return double(j.batches_released()); }},
    {"stoker_job_delivered_bytes_total", "counter",
     "Bytes of batches handed to the job's consumers.",
     [](const v1::JobStats& j) {
       return double(j.batches_delivered()) * double(j.slot_bytes());
     }},
    {"stoker_job_decode_errors_total", "counter",
     "Samples of the job that failed to read or decode (and were replaced).",
     [](const v1::JobStats& j) { return double(j.decode_errors()); }},
    {"stoker_job_decoded_images_per_second", "gauge",
     "Images decoded per second for the job, over the last seconds.",
     [](const v1::JobStats& j) { return j.decoded_per_second(); }},
    {"stoker_job_delivered_images_per_second", "gauge",
     "Images delivered per second to the job's consumers, over the last "
     "seconds.",
     [](const v1::JobStats& j) { return j.delivered_per_second(); }},
    {"stoker_job_consumers", "gauge", "Consumers attached to the job.",
     [](const v1::JobStats& j) { return double(j.consumers()); }},
    {"stoker_job_ring_slots", "gauge", "Slots in the job's ring.",
     [](const v1::JobStats& j) { return double(j.slots()); }},
    {"stoker_job_ring_occupancy_ratio", "gauge",
     "Share of the job's ring slots being filled, ready or leased (0 to 1).",
     [](const v1::JobStats& j) { return j.ring_occupancy_percent() / 100; }},
    {"stoker_job_ring_ready_slots", "gauge",
     "Slots of the job's ring decoded and waiting for consumers.",
     [](const v1::JobStats& j) { return double(j.ready_slots()); }},
    {"stoker_job_ring_bytes", "gauge", "Shared memory of the job's ring.",
     [](const v1::JobStats& j) { return double(j.ring_bytes()); }},
    {"stoker_job_worker_seconds_total", "counter",
     "Worker time spent on the job.",
     [](const v1::JobStats& j) { return j.worker_busy_us() / 1e6; }},
};

int HandleMetrics(mg_connection* connection, void* data) {
  const std::string body = static_cast<MetricsServer*>(data)->Render();
  mg_send_http_ok(connection, "text/plain; version=0.0.4; charset=utf-8",
                  static_cast<long long>(body.size()));
  mg_write(connection, body.data(), body.size());
  return 200;
}

}  // namespace

std::string RenderMetrics(const v1::Stats& stats, bool names) {
  Writer w;
  const v1::DaemonStats& d = stats.daemon();
  w.Family("stoker_build_info", "gauge", "stokerd's version, as a label.");
  w.Sample("stoker_build_info",
           absl::StrCat("version=\"", Escape(d.version()), "\""), 1);
  w.One("stoker_uptime_seconds", "gauge", "Seconds since stokerd started.",
        d.uptime_ms() / 1e3);
  w.One("stoker_workers", "gauge", "Decode worker threads.", d.workers());
  w.One("stoker_worker_busy_ratio", "gauge",
        "Share of the workers' time spent decoding over the last seconds "
        "(0 to 1).",
        d.worker_busy_percent() / 100);
  w.One("stoker_samples_decoded_total", "counter",
        "Images decoded, all jobs together.", double(d.samples_decoded()));
  w.One("stoker_decode_errors_total", "counter",
        "Samples that failed to read or decode, all jobs together.",
        double(d.decode_errors()));
  w.One("stoker_decoded_images_per_second", "gauge",
        "Images decoded per second over the last seconds, all jobs.",
        d.decoded_per_second());
  w.One("stoker_shm_bytes", "gauge", "Shared memory reserved by all job rings.",
        double(d.shm_bytes()));
  w.One("stoker_shm_budget_bytes", "gauge",
        "Shared memory the rings may reserve (0: no budget but /dev/shm).",
        double(d.shm_budget_bytes()));
  w.One("stoker_shm_free_bytes", "gauge", "Free bytes in /dev/shm.",
        double(d.shm_free_bytes()));
  w.One("stoker_resident_memory_bytes", "gauge",
        "stokerd's resident memory, rings apart.", double(d.rss_bytes()));
  w.One("stoker_jobs", "gauge", "Jobs stokerd holds.", stats.jobs_size());
  w.One("stoker_orphans_reclaimed_total", "counter",
        "Orphaned jobs (creator gone, no consumer) ended early to make room "
        "for a new job at a limit.",
        double(d.orphans_reclaimed()));
  for (const JobSeries& series : kJobSeries) {
    w.Family(series.name, series.type, series.help);
    for (const v1::JobStats& job : stats.jobs()) {
      w.Sample(series.name, JobLabels(job, names), series.value(job));
    }
  }
  w.Family("stoker_consumer_input_bound_ratio", "gauge",
           "Share of a consumer's recent time spent waiting for its next "
           "batch, as it last reported (0 to 1; high: the GPU starves).");
  for (const v1::JobStats& job : stats.jobs()) {
    for (const v1::ConsumerStats& consumer : job.consumer()) {
      if (consumer.recent_input_bound_percent() < 0) continue;
      w.Sample("stoker_consumer_input_bound_ratio",
               absl::StrCat(JobLabels(job, names), ",consumer=\"",
                            Escape(!names || consumer.name().empty()
                                       ? absl::StrCat(consumer.id())
                                       : consumer.name()),
                            "\""),
               consumer.recent_input_bound_percent() / 100);
    }
  }
  return w.Take();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, std::function<v1::Stats()> collect,
    bool names) {
  static std::once_flag initialized;
  std::call_once(initialized, [] { mg_init_library(0); });
  std::unique_ptr<MetricsServer> server(
      new MetricsServer(std::move(collect), names));
  const char* options[] = {
      "listening_ports",    address.c_str(), "num_threads", "2",
      "request_timeout_ms", "10000",         nullptr};
  mg_callbacks callbacks = {};
  mg_init_data init = {.callbacks = &callbacks,
                       .user_data = nullptr,
                       .configuration_options = options};
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error = {.code = &error_code,
                         .text = error_text,
                         .text_buffer_size = sizeof(error_text)};
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "metrics_address ", address, ": cannot serve metrics: ", error_text));
  }
  mg_set_request_handler(server->context_, "/metrics$", HandleMetrics,
                         server.get());
  mg_server_port port = {};
  if (mg_get_server_ports(server->context_, 1, &port) == 1) {
    server->port_ = port.port;
  }
  return server;
}

MetricsServer::~MetricsServer() {
  if (context_ != nullptr) mg_stop(context_);
}

}  // namespace stoker
