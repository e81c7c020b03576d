// FetchAccess: how one job reaches its remote shards, as its trainer sent
// it with CreateJob (loader.proto's RemoteAccess). The credentials are the
// trainer's own; stokerd uses them for that job's requests while the job is
// created, then drops them. Nothing here is ever logged or shown.
//
// The daemon's form of the access; the wire's becomes it in one place,
// FetchAccessOf (daemon/api/proto_convert.h). stokerctl index builds one
// from the environment.
#ifndef STOKER_DAEMON_REMOTE_REMOTE_ACCESS_H_
#define STOKER_DAEMON_REMOTE_REMOTE_ACCESS_H_

#include <string>

namespace stoker {

struct FetchAccess {
  std::string endpoint_url;  // s3:// URLs; empty: AWS
  std::string region;        // empty: us-east-1
  bool path_style = false;
  std::string access_key_id;  // empty: unsigned requests
  std::string secret_access_key;
  std::string session_token;

  bool signs() const { return !access_key_id.empty(); }
  std::string region_or_default() const {
    return region.empty() ? "us-east-1" : region;
  }
};

}  // namespace stoker

#endif  // STOKER_DAEMON_REMOTE_REMOTE_ACCESS_H_
