#include "daemon/remote/http_fetch.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/version.h"

namespace stoker {
namespace {

constexpr size_t kMaxErrorBody = 1024;

CURL* Handle(void* curl) { return static_cast<CURL*>(curl); }

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// "ETag" of "ETag: \"abc\"\r\n" gives "\"abc\"".
bool HeaderValue(absl::string_view line, absl::string_view name,
                 std::string* value) {
  if (line.size() <= name.size() || line[name.size()] != ':' ||
      !absl::EqualsIgnoreCase(line.substr(0, name.size()), name)) {
    return false;
  }
  *value =
      std::string(absl::StripAsciiWhitespace(line.substr(name.size() + 1)));
  return true;
}

// The <Code> of an S3 error answer, if it has one.
std::string ErrorCode(const std::string& body) {
  const size_t start = body.find("<Code>");
  const size_t end = body.find("</Code>");
  if (start == std::string::npos || end == std::string::npos || end < start) {
    return "";
  }
  std::string code = body.substr(start + 6, end - start - 6);
  if (code.size() > 64) code.resize(64);
  for (char& c : code) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '?';
  }
  return code;
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

}  // namespace

// One request and its answer, shared with curl's callbacks.
struct HttpFetcher::Exchange {
  CURL* curl = nullptr;
  const FetchPolicy* policy = nullptr;
  const ObjectVersion* want = nullptr;
  int fd = -1;
  uint64_t at = 0;  // where the next body byte goes (kept across attempts)
  uint64_t written = 0;
  bool body_started = false;
  // The answer.
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string etag;
  std::string last_modified;
  std::string error_body;
  // Why a callback stopped the transfer.
  bool changed = false;   // the body is of another version
  bool too_long = false;  // more bytes than the version's size
  int write_errno = 0;
  bool timed_out = false;
  bool cancelled = false;
};

namespace {

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<HttpFetcher::Exchange*>(user);
  const absl::string_view line(data, size * count);
  if (absl::StartsWith(line, "HTTP/")) {  // a new answer (after 100 Continue)
    x->etag.clear();
    x->last_modified.clear();
  }
  std::string value;
  if (HeaderValue(line, "ETag", &value)) x->etag = value;
  if (HeaderValue(line, "Last-Modified", &value)) x->last_modified = value;
  return size * count;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<HttpFetcher::Exchange*>(user);
  const size_t bytes = size * count;
  long status = 0;
  curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 && status != 206) {
    const size_t keep = std::min(bytes, kMaxErrorBody - x->error_body.size());
    x->error_body.append(data, keep);
    return bytes;
  }
  if (!x->body_started) {
    x->body_started = true;
    if (status == 200) x->at = 0;  // the whole object again, from its start
    const std::string& got = x->etag.empty() ? x->last_modified : x->etag;
    const std::string want = x->want->version.starts_with("lm:")
                                 ? x->want->version.substr(3)
                                 : x->want->version;
    if (!got.empty() && got != want) {
      x->changed = true;
      return 0;
    }
  }
  if (x->at + bytes > x->want->size) {
    x->too_long = true;
    return 0;
  }
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::pwrite(x->fd, data + done, bytes - done,
                               static_cast<off_t>(x->at + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      x->write_errno = errno;
      return 0;
    }
    done += static_cast<size_t>(n);
  }
  x->at += bytes;
  x->written += bytes;
  return bytes;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* x = static_cast<HttpFetcher::Exchange*>(user);
  if (x->policy->cancelled && x->policy->cancelled()) {
    x->cancelled = true;
    return 1;
  }
  if (absl::Now() > x->policy->deadline) {
    x->timed_out = true;
    return 1;
  }
  return 0;
}

// What the exchange's outcome means; *retry when trying again may help.
absl::Status Outcome(const HttpFetcher::Exchange& x, const std::string& name,
                     bool* retry) {
  *retry = false;
  const std::string shard = absl::StrCat("remote shard '", name, "': ");
  if (x.cancelled) return absl::CancelledError(shard + "fetch cancelled");
  if (x.timed_out || (x.code == CURLE_OPERATION_TIMEDOUT &&
                      absl::Now() > x.policy->deadline)) {
    return absl::DeadlineExceededError(
        shard + "not fetched by the deadline (--fetch_timeout)");
  }
  if (x.changed) {
    return absl::AbortedError(shard +
                              "the object changed while it was fetched");
  }
  if (x.too_long) {
    return absl::AbortedError(shard +
                              "the server sent more bytes than its size");
  }
  if (x.write_errno != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(shard, "writing it to the shard cache failed: ",
                     std::strerror(x.write_errno)));
  }
  if (x.code != CURLE_OK) {
    *retry = true;
    return absl::UnavailableError(
        absl::StrCat(shard, curl_easy_strerror(x.code)));
  }
  if (x.status == 200 || x.status == 206) return absl::OkStatus();
  const std::string code = ErrorCode(x.error_body);
  const std::string answer =
      absl::StrCat(shard, "HTTP ", x.status, code.empty() ? "" : " ", code);
  switch (x.status) {
    case 401:
    case 403:
      return absl::PermissionDeniedError(
          answer + " (the job's credentials may not read it)");
    case 404:
      return absl::NotFoundError(answer + " (no such object)");
    case 412:
    case 416:
      return absl::AbortedError(answer + " (the object changed)");
    case 408:
    case 429:
      *retry = true;
      return absl::UnavailableError(answer);
    default:
      *retry = x.status >= 500;
      return *retry ? absl::UnavailableError(answer)
                    : absl::FailedPreconditionError(answer);
  }
}

// Signs the request with the job's access (SigV4 as S3 takes it: the
// payload unsigned, temporary credentials' token a signed header), and
// makes it conditional on the version wanted. Returns the headers to free.
curl_slist* Sign(CURL* curl, const FetchAccess& access,
                 const ObjectVersion* want) {
  curl_slist* headers = nullptr;
  if (access.signs()) {
    const std::string sigv4 =
        absl::StrCat("aws:amz:", access.region_or_default(), ":s3");
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());  // copied
    curl_easy_setopt(curl, CURLOPT_USERNAME, access.access_key_id.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, access.secret_access_key.c_str());
    headers =
        curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!access.session_token.empty()) {
      headers = curl_slist_append(
          headers,
          absl::StrCat("x-amz-security-token: ", access.session_token).c_str());
    }
  }
  if (want != nullptr && want->version.starts_with('"')) {
    headers = curl_slist_append(
        headers, absl::StrCat("If-Match: ", want->version).c_str());
  }
  return headers;
}

}  // namespace

HttpFetcher::HttpFetcher() {
  InitCurlOnce();
  curl_ = curl_easy_init();
}

HttpFetcher::~HttpFetcher() { curl_easy_cleanup(Handle(curl_)); }

void HttpFetcher::Perform(const std::string& url, const FetchAccess& access,
                          bool head, const ObjectVersion* want, uint64_t from,
                          int fd, const FetchPolicy& policy,
                          Exchange* exchange) {
  CURL* curl = Handle(curl_);
  curl_easy_reset(curl);
  exchange->curl = curl;
  exchange->policy = &policy;
  exchange->want = want;
  exchange->fd = fd;
  exchange->at = from;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  // Bytes reach the cache file in writes of up to this much (16 KiB by
  // default: more system calls than the disk needs).
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 256L << 10);
  curl_easy_setopt(curl, CURLOPT_USERAGENT,
                   absl::StrCat("stokerd/", kVersion).c_str());
  curl_easy_setopt(
      curl, CURLOPT_CONNECTTIMEOUT_MS,
      static_cast<long>(absl::ToInt64Milliseconds(policy.connect_timeout)));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, policy.low_speed_bytes);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(std::max<int64_t>(
                       1, absl::ToInt64Seconds(policy.low_speed_time))));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, exchange);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, exchange);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, exchange);
  if (head) curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  const std::string range = absl::StrCat(from, "-");
  if (from > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  curl_slist* headers = Sign(curl, access, want);
  if (headers != nullptr) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  ++tally_.requests;
  exchange->code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &exchange->status);
  curl_slist_free_all(headers);
  // The handle keeps no pointer to this call's strings or exchange.
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
}

absl::StatusOr<ObjectVersion> HttpFetcher::Head(const std::string& url,
                                                const std::string& name,
                                                const FetchAccess& access,
                                                const FetchPolicy& policy) {
  absl::Duration wait = policy.first_backoff;
  for (int attempt = 1;; ++attempt) {
    Exchange x;
    Perform(url, access, /*head=*/true, nullptr, 0, -1, policy, &x);
    bool retry = false;
    absl::Status status = Outcome(x, name, &retry);
    if (status.ok()) {
      curl_off_t length = -1;
      curl_easy_getinfo(Handle(curl_), CURLINFO_CONTENT_LENGTH_DOWNLOAD_T,
                        &length);
      ObjectVersion version;
      version.version = !x.etag.empty()           ? x.etag
                        : x.last_modified.empty() ? std::string()
                                                  : "lm:" + x.last_modified;
      if (version.version.empty() || length < 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "remote shard '", name,
            "': the server gives no ETag or Last-Modified, or no "
            "Content-Length, so a cached copy could not be told from a "
            "changed object"));
      }
      version.size = static_cast<uint64_t>(length);
      return version;
    }
    if (!retry || attempt >= policy.attempts) return status;
    ++tally_.retries;
    if (!Backoff(wait, policy)) return status;
    wait = std::min(wait * 2, policy.max_backoff);
  }
}

absl::Status HttpFetcher::Get(const std::string& url, const std::string& name,
                              const FetchAccess& access,
                              const ObjectVersion& want, int fd,
                              const FetchPolicy& policy) {
  uint64_t at = 0;
  absl::Duration wait = policy.first_backoff;
  for (int attempt = 1;; ++attempt) {
    Exchange x;
    if (at > 0) ++tally_.resumed;
    Perform(url, access, /*head=*/false, &want, at, fd, policy, &x);
    tally_.bytes += x.written;
    at = x.at;
    bool retry = false;
    absl::Status status = Outcome(x, name, &retry);
    if (status.ok()) {
      if (at == want.size) return absl::OkStatus();
      retry = true;  // closed early without curl noticing
      status = absl::UnavailableError(
          absl::StrCat("remote shard '", name, "': the transfer ended at byte ",
                       at, " of ", want.size));
    }
    if (x.written > 0) attempt = 0;  // progress: a fresh set of attempts
    if (!retry || attempt >= policy.attempts) return status;
    ++tally_.retries;
    if (!Backoff(wait, policy)) return status;
    wait = x.written > 0 ? policy.first_backoff
                         : std::min(wait * 2, policy.max_backoff);
  }
}

}  // namespace stoker
