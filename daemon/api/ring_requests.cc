#include "daemon/api/ring_requests.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/fd_passing.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace stoker {
namespace {

// The descriptors to send: the job's ring and, with a lease token, the
// consumer's lease table.
absl::StatusOr<std::vector<UniqueFd>> OpenRing(
    const RingQuery& request, const PeerCredentials& credentials,
    const JobRegistry& registry) {
  auto job = registry.Get(request.job_id);
  if (!job.ok()) return job.status();
  const Peer peer{.credentials = credentials};
  if (absl::Status allowed =
          CheckAccess((*job)->access(), peer, request.job_id);
      !allowed.ok()) {
    return allowed;
  }
  std::vector<UniqueFd> fds;
  STOKER_ASSIGN_OR_RETURN(fds.emplace_back(), (*job)->RingFd());
  if (!request.lease_token.empty()) {
    STOKER_ASSIGN_OR_RETURN(
        fds.emplace_back(),
        (*job)->TakeLeaseFd(request.lease_token, credentials.uid));
  }
  return fds;
}

}  // namespace

absl::StatusOr<std::optional<RingQuery>> ParseRingRequest(
    std::string_view received) {
  constexpr size_t kMaxTokenBytes = 64;
  const size_t newline = received.find('\n');
  if (newline == std::string_view::npos) {
    if (received.size() > kMaxJobIdBytes + 1 + kMaxTokenBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ring request is a job id of at most ", kMaxJobIdBytes,
          " bytes, optionally a space and a lease token, and a newline"));
    }
    return std::nullopt;
  }
  const std::string_view line = received.substr(0, newline);
  const size_t space = line.find(' ');
  RingQuery request;
  request.job_id = std::string(line.substr(0, space));
  if (space != std::string_view::npos) {
    request.lease_token = std::string(line.substr(space + 1));
  }
  return request;
}

void AnswerRingRequest(int fd, const PeerCredentials& credentials,
                       const absl::StatusOr<RingQuery>& request,
                       const JobRegistry& registry) {
  absl::StatusOr<std::vector<UniqueFd>> opened =
      request.ok() ? OpenRing(*request, credentials, registry)
                   : request.status();
  if (!opened.ok()) {
    spdlog::debug("ring request from uid {} pid {} refused: {}",
                  credentials.uid, credentials.pid, opened.status().message());
    (void)SendWithFd(fd, EncodeStatus(opened.status()), -1);
    return;
  }
  std::vector<int> raw;
  for (const UniqueFd& each : *opened) raw.push_back(each.get());
  (void)SendWithFds(fd, EncodeStatus(absl::OkStatus()), raw);
}

}  // namespace stoker
