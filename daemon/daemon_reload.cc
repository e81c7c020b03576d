// Daemon: what a reload (SIGHUP) changes (see daemon.h).
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/os/cgroup_memory.h"
#include "daemon/settings/settings.h"

namespace stoker {

RegistryLimits RegistryLimitsOf(const DaemonOptions& options) {
  return {.max_jobs = options.max_jobs,
          .max_jobs_per_user = options.max_jobs_per_user,
          .shm_budget_bytes = options.shm_budget_bytes,
          .shm_budget_per_user_bytes = options.shm_budget_per_user_bytes,
          .max_dataset_samples = options.max_dataset_samples,
          .max_index_bytes_per_user = options.max_index_bytes_per_user,
          .max_field_bytes = options.max_field_bytes,
          .scan_timeout = options.scan_timeout,
          .fetch_timeout = options.fetch_timeout,
          .orphan_timeout = options.orphan_timeout,
          .ended_job_ttl = options.ended_job_ttl,
          .memory_limit = options.memory_limit ? options.memory_limit
                                               : CgroupMemoryLimit()};
}

ReloadReport Daemon::Reconfigure(const DaemonOptions& next) {
  ReloadReport report;
  absl::MutexLock lock(&options_mu_);
  // New roots must exist; if they do not, the old ones stay.
  DaemonOptions asked = next;
  if (next.dataset_roots != options_.dataset_roots) {
    if (absl::Status set = dataset_paths_->SetRoots(next.dataset_roots);
        !set.ok()) {
      report.refused.push_back(
          absl::StrCat("dataset_roots stay '",
                       Describe(*FindSetting("dataset_roots"), options_),
                       "': ", set.message()));
      asked.dataset_roots = options_.dataset_roots;
    }
  }
  DaemonOptions updated = options_;
  for (const Setting& setting : Settings()) {
    const std::string was = Describe(setting, options_);
    const std::string is = Describe(setting, asked);
    if (was == is) continue;
    if (!setting.reloadable) {
      report.refused.push_back(absl::StrCat(
          setting.name, " cannot change while stokerd runs: it stays '", was,
          "' (the file asks for '", is, "'); restart stokerd to apply it"));
      continue;
    }
    // `asked` was validated: its value reads back as it is.
    (void)setting.parse(setting.show(asked), &updated);
    report.applied.push_back(absl::StrCat(setting.name, ": ", was, " -> ", is));
  }
  registry_->SetLimits(RegistryLimitsOf(updated));
  limits_->SetMax(updated.max_leases_per_user);
  peers_->SetLimits(updated.max_connections_per_user,
                    updated.handshake_timeout);
  lease_timeout_ms_ = absl::ToInt64Milliseconds(updated.lease_timeout);
  if (updated.log_level != options_.log_level) {
    spdlog::default_logger()->set_level(
        spdlog::level::from_str(updated.log_level));
  }
  options_ = updated;
  return report;
}

}  // namespace stoker
