// CollectStats: one snapshot of the daemon's and its jobs' counters, for
// GetStats (filtered by who asks) and for the metrics endpoint (all jobs).
#ifndef STOKER_DAEMON_API_STATS_H_
#define STOKER_DAEMON_API_STATS_H_

#include <chrono>
#include <functional>

#include "daemon/jobs/job.h"
#include "daemon/jobs/job_registry.h"
#include "daemon/jobs/worker_pool.h"
#include "stoker/v1/loader.pb.h"

namespace stoker {

// Daemon totals cover every job; per-job entries only the jobs `include`
// accepts (all when it is empty).
void CollectStats(const WorkerPool& pool, const JobRegistry& registry,
                  std::chrono::steady_clock::time_point started,
                  const std::function<bool(const Job&)>& include,
                  v1::Stats* out);

}  // namespace stoker

#endif  // STOKER_DAEMON_API_STATS_H_
