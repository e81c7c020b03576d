// Remote shard names: s3://bucket/key, http://host[:port]/path and
// https://host[:port]/path, and the HTTP URL each one is fetched from.
//
// A name holds no user or password, query or fragment (what a job spec
// holds is shown by GetJob and ListJobs, so no secret may ride in it; a
// presigned URL's signature would), no whitespace and no control byte.
#ifndef STOKER_DAEMON_REMOTE_REMOTE_URL_H_
#define STOKER_DAEMON_REMOTE_REMOTE_URL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "daemon/remote/remote_access.h"

namespace stoker {

// Whether `shard` names a remote shard (starts with s3://, http:// or
// https://, case-insensitively for the scheme).
bool IsRemoteShard(absl::string_view shard);

// Whether `shard` is an s3:// name (fetched with the job's credentials;
// http(s) names are fetched unsigned).
bool IsS3Name(absl::string_view shard);

// `url` fit for a message or the log: its user name and password, query
// and fragment withheld ("https://...@host/x.tar?...").
std::string Redacted(absl::string_view url);

// INVALID_ARGUMENT naming `field` when `shard` (a remote name, braces
// allowed) breaks the rules above; the name in it Redacted.
absl::Status CheckRemoteName(absl::string_view field, absl::string_view shard);

// INVALID_ARGUMENT when the access could not make well-formed requests: a
// region other than letters, digits and '-', credentials holding anything
// but printable ASCII (they become request headers), or fields longer than
// their bounds. The message names the field, never its value.
absl::Status CheckFetchAccess(const FetchAccess& access);

// The URL `shard` is fetched from: an http(s) name as it is; an s3 name
// under access.endpoint_url (or AWS's endpoint for the region), its key
// percent-encoded as S3 signs it, path-style or virtual-hosted. An
// endpoint that is not http(s)://host[:port] is INVALID_ARGUMENT.
absl::StatusOr<std::string> FetchUrlOf(const std::string& shard,
                                       const FetchAccess& access);

}  // namespace stoker

#endif  // STOKER_DAEMON_REMOTE_REMOTE_URL_H_
