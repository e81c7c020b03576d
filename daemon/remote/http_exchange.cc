#include "daemon/remote/http_exchange.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "common/version.h"

namespace stoker {
namespace {

constexpr size_t kMaxErrorBody = 1024;

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

// "bytes 0-0/1234", or a 416's "bytes */1234".
void ParseRange(const std::string& value, HttpExchange* x) {
  x->range_start = x->range_total = -1;
  const size_t slash = value.find('/');
  if (!absl::StartsWith(value, "bytes ") || slash == std::string::npos) return;
  int64_t start = -1;
  int64_t total = -1;
  const size_t dash = value.find('-');
  if (dash != std::string::npos && dash < slash &&
      !absl::SimpleAtoi(value.substr(6, dash - 6), &start)) {
    return;
  }
  if (!absl::SimpleAtoi(value.substr(slash + 1), &total)) return;
  x->range_start = start;
  x->range_total = total;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<HttpExchange*>(user);
  const absl::string_view line(data, size * count);
  if (absl::StartsWith(line, "HTTP/")) {  // a new answer (after 100 Continue)
    x->etag.clear();
    x->last_modified.clear();
    x->range_start = x->range_total = -1;
  }
  std::string value;
  if (HeaderValue(line, "ETag", &value)) x->etag = value;
  if (HeaderValue(line, "Last-Modified", &value)) x->last_modified = value;
  if (HeaderValue(line, "Content-Range", &value)) ParseRange(value, x);
  return size * count;
}

// Whether the answer is of the version wanted, compared as the probe took
// it: by ETag, or by Last-Modified when the object had no ETag.
bool SameVersion(const HttpExchange& x) {
  const std::string& version = x.want->version;
  if (version.starts_with("lm:")) {
    return x.last_modified.empty() || x.last_modified == version.substr(3);
  }
  return x.etag.empty() || x.etag == version;
}

// The first body bytes of a GET: are they of the version and the bytes
// asked for?
bool CheckBodyStart(HttpExchange* x, long status) {
  curl_off_t length = -1;
  curl_easy_getinfo(x->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  if (!SameVersion(*x)) {
    x->changed = true;
  } else if (status == 200) {  // the whole object again, from its start
    x->at = 0;
    x->changed = length >= 0 && uint64_t(length) != x->want->size;
  } else if (x->range_total >= 0 && uint64_t(x->range_total) != x->want->size &&
             !x->want->version.starts_with('"')) {
    // Another size, and nothing made the answer conditional (a weak ETag
    // or Last-Modified, whose resolution is a second): a new version.
    x->changed = true;
  } else if (x->range_start < 0 || uint64_t(x->range_start) != x->from ||
             (x->range_total >= 0 &&
              uint64_t(x->range_total) != x->want->size)) {
    // Of the version asked for (If-Match held for a strong ETag), yet not
    // the bytes asked for, or of another size: the server's fault.
    x->bad_range = true;
  }
  return !x->changed && !x->bad_range;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* x = static_cast<HttpExchange*>(user);
  const size_t bytes = size * count;
  long status = 0;
  curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200 && status != 206) {
    const size_t keep = std::min(bytes, kMaxErrorBody - x->error_body.size());
    x->error_body.append(data, keep);
    return bytes;
  }
  if (x->probe) {  // its headers are all a probe wants
    x->probed = true;
    // The byte asked for; more (a 200, or a server that ignores the range's
    // end) is cut short rather than downloaded.
    x->written += bytes;
    return status == 206 && x->written <= 1 ? bytes : 0;
  }
  if (!x->body_started) {
    x->body_started = true;
    if (!CheckBodyStart(x, status)) return 0;
  }
  if (x->at + bytes > x->want->size) {
    x->changed = true;
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
  auto* x = static_cast<HttpExchange*>(user);
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

// What a failed answer means; *retry when trying again may help.
absl::Status StatusOutcome(const HttpExchange& x, const std::string& shard,
                           bool* retry) {
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
      return absl::AbortedError(answer + " (the object changed)");
    case 416:
      if (x.probe && x.range_total == 0) return absl::OkStatus();  // empty
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

// What the exchange's outcome means; *retry when trying again may help.
}  // namespace

absl::Status ExchangeOutcome(const HttpExchange& x, const std::string& name,
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
  if (x.bad_range) {
    return absl::FailedPreconditionError(absl::StrCat(
        shard, "asked for bytes from ", x.from, " of ", x.want->size,
        ", the server answered ",
        x.range_start < 0
            ? std::string("without a Content-Range")
            : absl::StrCat("bytes from ", x.range_start, " of ",
                           x.range_total < 0 ? std::string("an unknown size")
                                             : absl::StrCat(x.range_total))));
  }
  if (x.write_errno != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(shard, "writing it to the shard cache failed: ",
                     std::strerror(x.write_errno)));
  }
  if (x.code == CURLE_PEER_FAILED_VERIFICATION ||
      x.code == CURLE_SSL_CACERT_BADFILE) {
    return absl::FailedPreconditionError(
        absl::StrCat(shard, curl_easy_strerror(x.code),
                     " (a store behind a private CA needs --remote_ca_file)"));
  }
  if (x.code != CURLE_OK && !x.probed) {
    *retry = true;
    return absl::UnavailableError(
        absl::StrCat(shard, curl_easy_strerror(x.code)));
  }
  if (x.status == 200 || x.status == 206) return absl::OkStatus();
  return StatusOutcome(x, shard, retry);
}

curl_slist* SignRequest(CURL* curl, const FetchAccess& access,
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

void SetUpExchange(CURL* curl, const std::string& url,
                   const FetchPolicy& policy, HttpExchange* exchange) {
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
  if (!policy.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, policy.ca_file.c_str());
  }
}

}  // namespace stoker
