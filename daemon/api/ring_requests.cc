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

absl::StatusOr<std::string> ReadJobId(int fd) {
  std::string line;
  char buffer[kMaxJobIdBytes + 2];
  while (line.find('\n') == std::string::npos) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::InvalidArgumentError(
          "the ring request did not arrive within a second");
    }
    line.append(buffer, static_cast<size_t>(n));
    if (line.size() > kMaxJobIdBytes + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("a ring request is a job id of at most ", kMaxJobIdBytes,
                       " bytes and a newline"));
    }
  }
  line.resize(line.find('\n'));
  return line;
}

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

void ServeRingRequest(int fd, const PeerCredentials& credentials,
                      const JobRegistry& registry) {
  const timeval timeout{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  absl::StatusOr<std::string> id = ReadJobId(fd);
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
