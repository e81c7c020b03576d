#include "daemon/api/ring_requests.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/fd_passing.h"
#include "common/log.h"

namespace stoker {
namespace {

absl::StatusOr<UniqueFd> OpenRing(const std::string& job_id,
                                  const PeerCredentials& credentials,
                                  const JobRegistry& registry) {
  auto job = registry.Get(job_id);
  if (!job.ok()) return job.status();
  const Peer peer{.credentials = credentials};
  if (absl::Status allowed = CheckAccess((*job)->access(), peer, job_id);
      !allowed.ok()) {
    return allowed;
  }
  const std::string name = "/" + (*job)->segment_name();
  UniqueFd ring(::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0));
  if (!ring && (errno == EMFILE || errno == ENFILE)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("stokerd cannot open the ring of job ", job_id, ": ",
                     std::strerror(errno), " (stokerd's own descriptors)"));
  }
  if (!ring) {
    // The job ended (its ring is unlinked then): say why, as its stream
    // would (a failed job's DATA_LOSS naming the file).
    if (absl::Status ended = (*job)->error(); !ended.ok()) return ended;
    return absl::NotFoundError(absl::StrCat("the ring of job ", job_id,
                                            " is gone (the job has ended)"));
  }
  return ring;
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ParseRingRequest(
    std::string_view received) {
  const size_t newline = received.find('\n');
  if (newline == std::string_view::npos) {
    if (received.size() > kMaxJobIdBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("a ring request is a job id of at most ", kMaxJobIdBytes,
                       " bytes and a newline"));
    }
    return std::nullopt;
  }
  return std::string(received.substr(0, newline));
}

void AnswerRingRequest(int fd, const PeerCredentials& credentials,
                       const absl::StatusOr<std::string>& id,
                       const JobRegistry& registry) {
  absl::StatusOr<UniqueFd> ring =
      id.ok() ? OpenRing(*id, credentials, registry) : id.status();
  if (!ring.ok()) {
    spdlog::debug("ring request from uid {} pid {} refused: {}",
                  credentials.uid, credentials.pid, ring.status().message());
    (void)SendWithFd(fd, EncodeStatus(ring.status()), -1);
    return;
  }
  (void)SendWithFd(fd, EncodeStatus(absl::OkStatus()), ring->get());
}

}  // namespace stoker
