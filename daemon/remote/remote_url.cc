#include "daemon/remote/remote_url.h"

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace stoker {
namespace {

struct Parts {
  std::string scheme;     // s3, http or https
  std::string authority;  // bucket, or host[:port]
  std::string path;       // the key (s3) or "/path" (http)
};

bool Parse(absl::string_view name, Parts* out) {
  const size_t colon = name.find("://");
  if (colon == absl::string_view::npos) return false;
  out->scheme = absl::AsciiStrToLower(name.substr(0, colon));
  if (out->scheme != "s3" && out->scheme != "http" && out->scheme != "https") {
    return false;
  }
  const absl::string_view rest = name.substr(colon + 3);
  const size_t slash = rest.find('/');
  out->authority = std::string(rest.substr(0, slash));
  if (slash == absl::string_view::npos) {
    out->path.clear();
  } else {
    out->path =
        std::string(rest.substr(out->scheme == "s3" ? slash + 1 : slash));
  }
  return true;
}

bool Unreserved(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

// S3's canonical URI encoding: every byte but unreserved ones and '/'.
std::string EncodeKey(absl::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : key) {
    if (Unreserved(c) || c == '/') {
      out.push_back(c);
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += {'%', kHex[byte >> 4], kHex[byte & 15]};
    }
  }
  return out;
}

}  // namespace

bool IsRemoteShard(absl::string_view shard) {
  Parts parts;
  return Parse(shard, &parts);
}

bool IsS3Name(absl::string_view shard) {
  Parts parts;
  return Parse(shard, &parts) && parts.scheme == "s3";
}

std::string Redacted(absl::string_view url) {
  // Whatever lies between the scheme and the last '@' may be a password
  // (even one holding '/', '?' or '#'); then the query and fragment go.
  std::string out(url);
  const size_t start = out.find("://");
  const size_t at = out.rfind('@');
  if (start != std::string::npos && at != std::string::npos && at > start) {
    out.replace(start + 3, at - start - 3, "...");
  }
  const size_t query = out.find_first_of("?#");
  if (query != std::string::npos) out.replace(query, std::string::npos, "?...");
  return out;
}

absl::Status CheckRemoteName(absl::string_view field, absl::string_view shard) {
  // Messages are logged: a password or a signed query is never quoted.
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " '", Redacted(shard), "' ", why));
  };
  Parts parts;
  if (!Parse(shard, &parts)) {
    return bad("is not an s3://, http:// or https:// URL");
  }
  for (const char c : shard) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return bad("holds whitespace or a control byte");
    }
  }
  if (parts.authority.empty()) return bad("names no bucket or host");
  const size_t colon = parts.authority.rfind(':');
  const bool bad_port =
      parts.scheme != "s3" && colon != std::string::npos &&
      parts.authority.find(']', colon) == std::string::npos &&
      !absl::c_all_of(parts.authority.substr(colon + 1),
                      [](char c) { return absl::ascii_isdigit(c); });
  // A port that is not a number is a password ("https://user:pa/ss@host").
  if (parts.authority.find('@') != std::string::npos || bad_port) {
    return bad(
        "holds a user name or password: pass credentials with the job's "
        "remote access instead (a job's shards are shown by GetJob)");
  }
  if (absl::StrContains(shard, "?") || absl::StrContains(shard, "#")) {
    return bad(
        "holds a query or fragment: a job's shards are shown by GetJob, so "
        "no signature or token may ride in them; pass credentials instead");
  }
  if (parts.scheme == "s3" && parts.path.empty()) return bad("names no key");
  if (parts.scheme != "s3" && parts.path.size() <= 1)
    return bad("names no path");
  return absl::OkStatus();
}

absl::Status CheckFetchAccess(const FetchAccess& access) {
  struct Field {
    const char* name;
    const std::string& value;
    size_t max;
  };
  const Field fields[] = {{"endpoint_url", access.endpoint_url, 2048},
                          {"region", access.region, 64},
                          {"access_key_id", access.access_key_id, 256},
                          {"secret_access_key", access.secret_access_key, 256},
                          {"session_token", access.session_token, 8192}};
  for (const Field& field : fields) {
    bool printable = true;
    for (const char c : field.value) {
      printable &= c > 0x20 && c < 0x7f;
    }
    if (!printable || field.value.size() > field.max) {
      return absl::InvalidArgumentError(
          absl::StrCat("remote.", field.name, " must be at most ", field.max,
                       " printable ASCII characters without spaces"));
    }
  }
  for (const char c : access.region) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') {
      return absl::InvalidArgumentError(
          "remote.region holds characters other than letters, digits and '-'");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FetchUrlOf(const std::string& shard,
                                       const FetchAccess& access) {
  Parts parts;
  if (!Parse(shard, &parts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", shard, "' is not a remote shard"));
  }
  if (parts.scheme != "s3") {
    return absl::StrCat(parts.scheme, "://", parts.authority, parts.path);
  }
  std::string endpoint = access.endpoint_url;
  if (endpoint.empty()) {
    endpoint = absl::StrCat("https://s3.", access.region_or_default(),
                            ".amazonaws.com");
  }
  while (endpoint.ends_with('/')) endpoint.pop_back();
  Parts at;
  if (!Parse(endpoint, &at) || at.scheme == "s3" || at.authority.empty() ||
      !at.path.empty() || at.authority.find('@') != std::string::npos ||
      absl::StrContains(endpoint, "?") || absl::StrContains(endpoint, "#")) {
    return absl::InvalidArgumentError(
        absl::StrCat("remote.endpoint_url '", Redacted(access.endpoint_url),
                     "' is not http(s)://host[:port] (credentials go in the "
                     "access's keys, never in the URL)"));
  }
  const std::string key = EncodeKey(parts.path);
  if (access.path_style) {
    return absl::StrCat(at.scheme, "://", at.authority, "/", parts.authority,
                        "/", key);
  }
  return absl::StrCat(at.scheme, "://", parts.authority, ".", at.authority, "/",
                      key);
}

}  // namespace stoker
