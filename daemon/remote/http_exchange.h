// One HTTP exchange of HttpFetcher (http_fetch.h) with libcurl: the
// request's options and signature, what curl's callbacks see of the answer,
// and what the answer means. Internal to daemon/remote.
#ifndef STOKER_DAEMON_REMOTE_HTTP_EXCHANGE_H_
#define STOKER_DAEMON_REMOTE_HTTP_EXCHANGE_H_

#include <curl/curl.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "daemon/remote/http_fetch.h"
#include "daemon/remote/remote_access.h"

namespace stoker {

// One request and its answer, shared with curl's callbacks.
struct HttpExchange {
  CURL* curl = nullptr;
  const FetchPolicy* policy = nullptr;
  const ObjectVersion* want = nullptr;
  bool probe = false;
  int fd = -1;
  uint64_t from = 0;  // the first byte asked for
  uint64_t at = 0;    // where the next body byte goes
  uint64_t written = 0;
  bool body_started = false;
  // The answer.
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string etag;
  std::string last_modified;
  int64_t range_start = -1;  // Content-Range: bytes start-end/total
  int64_t range_total = -1;
  std::string error_body;
  // Why a callback stopped the transfer.
  bool probed = false;     // a probe has the headers it wanted
  bool changed = false;    // another version, or another size
  bool bad_range = false;  // not the bytes asked for
  int write_errno = 0;
  bool timed_out = false;
  bool cancelled = false;
};

// Sets the options every request shares (http(s) only, no redirects, the
// policy's timeouts, 256 KiB writes) and the callbacks that fill `exchange`.
void SetUpExchange(CURL* curl, const std::string& url,
                   const FetchPolicy& policy, HttpExchange* exchange);

// Signs the request with the job's access (SigV4 as S3 takes it: the
// payload unsigned, temporary credentials' token a signed header), and
// makes it conditional (If-Match) on the version wanted. Returns the
// header list, for the caller to free after the request.
curl_slist* SignRequest(CURL* curl, const FetchAccess& access,
                        const ObjectVersion* want);

// What the exchange's outcome means (errors name the shard `name`);
// *retry when trying again may help.
absl::Status ExchangeOutcome(const HttpExchange& x, const std::string& name,
                             bool* retry);

}  // namespace stoker

#endif  // STOKER_DAEMON_REMOTE_HTTP_EXCHANGE_H_
