// HttpFetcher: one remote object's version (a probe) and its bytes (GET)
// over libcurl, with the requesting job's access: AWS Signature Version 4
// (CURLOPT_AWS_SIGV4) when it holds credentials, plain requests otherwise.
//
// The probe is a GET of the object's first byte (Range: bytes=0-0), not a
// HEAD: it needs the same permission as reading the object (S3 may answer
// a HEAD to a user who cannot decrypt the object), and its answer carries
// the version (ETag, else Last-Modified) and, in Content-Range, the size.
//
// Only http and https are spoken and redirects are not followed: a name
// cannot turn into a file:// read or a request elsewhere. A GET is written
// to a file as it arrives (curl's own buffer is all the memory it takes).
// Timeouts, broken connections and 5xx/429 answers are retried with
// exponential backoff; a broken GET resumes with a ranged GET from the
// last byte written, on condition (If-Match) that the object is still the
// version its probe gave, and the answer's Content-Range must start there.
// Not thread-safe: one per thread.
#ifndef STOKER_DAEMON_REMOTE_HTTP_FETCH_H_
#define STOKER_DAEMON_REMOTE_HTTP_FETCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "daemon/remote/remote_access.h"

namespace stoker {

// What a probe tells of an object: the version a cache keys it by (its ETag,
// or Last-Modified when the server gives none) and its size.
struct ObjectVersion {
  std::string version;
  uint64_t size = 0;
};

struct FetchPolicy {
  int attempts = 6;  // per request, the first one included
  absl::Duration first_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
  absl::Duration connect_timeout = absl::Seconds(10);
  // A transfer slower than this many bytes a second for low_speed_time is
  // broken off (and retried).
  long low_speed_bytes = 1024;
  absl::Duration low_speed_time = absl::Seconds(30);
  absl::Time deadline = absl::InfiniteFuture();
  std::string ca_file;  // https: PEM certificates to trust; "": the system's
  std::function<bool()> cancelled;
};

// What a fetcher did, for the daemon's counters.
struct FetchTally {
  uint64_t requests = 0;
  uint64_t retries = 0;
  uint64_t resumed = 0;  // ranged GETs after a broken transfer
  uint64_t bytes = 0;    // body bytes written
};

struct HttpExchange;  // one request and its answer (http_exchange.h)

class HttpFetcher {
 public:
  HttpFetcher();
  ~HttpFetcher();
  HttpFetcher(const HttpFetcher&) = delete;
  HttpFetcher& operator=(const HttpFetcher&) = delete;

  // Errors name `name` (the shard as the job named it, never the request's
  // headers): PERMISSION_DENIED for 401/403, NOT_FOUND for 404,
  // FAILED_PRECONDITION for other 4xx and for an object without ETag or
  // Last-Modified or size, UNAVAILABLE when retries ran out,
  // DEADLINE_EXCEEDED or CANCELLED as the policy says.
  absl::StatusOr<ObjectVersion> Probe(const std::string& url,
                                      const std::string& name,
                                      const FetchAccess& access,
                                      const FetchPolicy& policy);

  // Writes the object's `want.size` bytes to `fd` from offset 0. ABORTED
  // when the object is no longer version `want` (replaced meanwhile); a
  // server that keeps sending bytes without getting further (more than four
  // times the size in all) is FAILED_PRECONDITION; else as Probe.
  absl::Status Get(const std::string& url, const std::string& name,
                   const FetchAccess& access, const ObjectVersion& want, int fd,
                   const FetchPolicy& policy);

  const FetchTally& tally() const { return tally_; }
  // The tally so far, which then starts again from zero.
  FetchTally TakeTally() { return std::exchange(tally_, {}); }

 private:
  // One request; its outcome in *exchange.
  void Perform(const std::string& url, const FetchAccess& access, bool probe,
               const ObjectVersion* want, uint64_t from, int fd,
               const FetchPolicy& policy, HttpExchange* exchange);

  void* curl_;  // CURL*
  FetchTally tally_;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_REMOTE_HTTP_FETCH_H_
