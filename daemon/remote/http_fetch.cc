#include "daemon/remote/http_fetch.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "daemon/remote/http_exchange.h"

namespace stoker {
namespace {

CURL* Handle(void* curl) { return static_cast<CURL*>(curl); }

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Sleeps `d`, waking early (false) when the policy's request is cancelled
// or its deadline would pass.
bool Backoff(absl::Duration d, const FetchPolicy& policy) {
  const absl::Time until = absl::Now() + d;
  if (until > policy.deadline) return false;
  while (absl::Now() < until) {
    if (policy.cancelled && policy.cancelled()) return false;
    absl::SleepFor(std::min(absl::Milliseconds(50), until - absl::Now()));
  }
  return true;
}

// Why retrying stopped before the attempts ran out: cancelled, or the
// deadline would pass during the wait.
absl::Status GaveUp(const FetchPolicy& policy, const std::string& name,
                    const absl::Status& last) {
  if (policy.cancelled && policy.cancelled()) {
    return absl::CancelledError(
        absl::StrCat("remote shard '", name, "': fetch cancelled"));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "remote shard '", name,
      "': not fetched by the deadline (--fetch_timeout); last error: ",
      last.message()));
}

}  // namespace

HttpFetcher::HttpFetcher() {
  InitCurlOnce();
  curl_ = curl_easy_init();
}

HttpFetcher::~HttpFetcher() { curl_easy_cleanup(Handle(curl_)); }

void HttpFetcher::Perform(const std::string& url, const FetchAccess& access,
                          bool probe, const ObjectVersion* want, uint64_t from,
                          int fd, const FetchPolicy& policy,
                          HttpExchange* exchange) {
  CURL* curl = Handle(curl_);
  curl_easy_reset(curl);
  exchange->curl = curl;
  exchange->policy = &policy;
  exchange->want = want;
  exchange->probe = probe;
  exchange->fd = fd;
  exchange->from = exchange->at = from;
  SetUpExchange(curl, url, policy, exchange);
  const std::string range = probe ? "0-0" : absl::StrCat(from, "-");
  if (probe || from > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  curl_slist* headers = SignRequest(curl, access, want);
  if (headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  ++tally_.requests;
  exchange->code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &exchange->status);
  curl_slist_free_all(headers);
  // The handle keeps no pointer to this call's strings or exchange.
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
}

absl::StatusOr<ObjectVersion> HttpFetcher::Probe(const std::string& url,
                                                 const std::string& name,
                                                 const FetchAccess& access,
                                                 const FetchPolicy& policy) {
  absl::Duration wait = policy.first_backoff;
  for (int attempt = 1;; ++attempt) {
    HttpExchange x;
    Perform(url, access, /*probe=*/true, nullptr, 0, -1, policy, &x);
    bool retry = false;
    absl::Status status = ExchangeOutcome(x, name, &retry);
    if (status.ok()) {
      // 206 (or 416 for an empty object): the size is Content-Range's
      // total; 200 (ranges not served): Content-Length.
      curl_off_t length = -1;
      curl_easy_getinfo(Handle(curl_), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                        &length);
      const int64_t size = x.status == 200 ? length : x.range_total;
      ObjectVersion version;
      version.version = !x.etag.empty()           ? x.etag
                        : x.last_modified.empty() ? std::string()
                                                  : "lm:" + x.last_modified;
      if (version.version.empty() || size < 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "remote shard '", name,
            "': the server gives no ETag or Last-Modified, or no size, so a "
            "cached copy could not be told from a changed object"));
      }
      version.size = static_cast<uint64_t>(size);
      return version;
    }
    if (!retry || attempt >= policy.attempts) return status;
    ++tally_.retries;
    if (!Backoff(wait, policy)) return GaveUp(policy, name, status);
    wait = std::min(wait * 2, policy.max_backoff);
  }
}

absl::Status HttpFetcher::Get(const std::string& url, const std::string& name,
                              const FetchAccess& access,
                              const ObjectVersion& want, int fd,
                              const FetchPolicy& policy) {
  uint64_t at = 0;
  uint64_t furthest = 0;  // progress is getting past it
  uint64_t received = 0;
  absl::Duration wait = policy.first_backoff;
  for (int attempt = 1;; ++attempt) {
    HttpExchange x;
    if (at > 0) ++tally_.resumed;
    Perform(url, access, /*probe=*/false, &want, at, fd, policy, &x);
    tally_.bytes += x.written;
    received += x.written;
    at = x.at;
    bool retry = false;
    absl::Status status = ExchangeOutcome(x, name, &retry);
    if (status.ok()) {
      if (at == want.size) return absl::OkStatus();
      retry = true;  // closed early without curl noticing
      status = absl::UnavailableError(
          absl::StrCat("remote shard '", name, "': the transfer ended at byte ",
                       at, " of ", want.size));
    }
    if (at > furthest) {
      furthest = at;
      attempt = 0;  // progress: a fresh set of attempts
    }
    if (received > 4 * want.size + (uint64_t{1} << 20)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "remote shard '", name, "': the server sent ", received,
          " bytes of a ", want.size, "-byte object without getting further"));
    }
    if (!retry || attempt >= policy.attempts) return status;
    ++tally_.retries;
    if (!Backoff(wait, policy)) return GaveUp(policy, name, status);
    wait = attempt == 0 ? policy.first_backoff
                        : std::min(wait * 2, policy.max_backoff);
  }
}

}  // namespace stoker
