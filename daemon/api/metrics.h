// Metrics: stokerd's counters and gauges in the Prometheus text exposition
// format, served over HTTP (GET /metrics) by civetweb on the address of
// --metrics_address, meant to be a loopback one ("127.0.0.1:9464").
//
// Each scrape takes a fresh snapshot through `collect` (CollectStats over
// all jobs); per-job series carry the label job_id, and job (the name its
// user gave it) only with `names` (metrics_labels: names): the endpoint
// answers every local user, and a job's name is its user's business.
//
// Thread-safety: the server's threads call `collect` concurrently.
#ifndef STOKER_DAEMON_API_METRICS_H_
#define STOKER_DAEMON_API_METRICS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "stoker/v1/loader.pb.h"

struct mg_context;

namespace stoker {

// The exposition text of one snapshot.
std::string RenderMetrics(const v1::Stats& stats, bool names);

class MetricsServer {
 public:
  // Listens on `address` ("host:port"; port 0 picks a free one).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address, std::function<v1::Stats()> collect,
      bool names);
  ~MetricsServer();

  int port() const { return port_; }
  // Called by the HTTP handler.
  std::string Render() const { return RenderMetrics(collect_(), names_); }

 private:
  MetricsServer(std::function<v1::Stats()> collect, bool names)
      : collect_(std::move(collect)), names_(names) {}

  const std::function<v1::Stats()> collect_;
  const bool names_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_METRICS_H_
