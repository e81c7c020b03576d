// ObjectStore: where remote shards are read from, as the shard cache and
// the dataset sources see it: an object's version (a probe made with one
// job's access) and its bytes. HttpStore is the real one (libcurl: HTTP(S)
// and S3, see http_fetch.h); tests give the cache and the dataset sources
// an in-memory store instead, so that their logic is tested without a
// server.
//
// A store is one job's view of the remote side: it holds that job's
// access (its credentials for s3:// names) and uses it for every request it
// makes. The credentials never leave it.
//
// Thread-safety: implementations are thread-safe (several shards are
// fetched at once).
#ifndef STOKER_DAEMON_REMOTE_OBJECT_STORE_H_
#define STOKER_DAEMON_REMOTE_OBJECT_STORE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "daemon/remote/http_fetch.h"
#include "daemon/remote/remote_access.h"

namespace stoker {

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // What identifies `name`'s object for every user (the URL it is fetched
  // from): a cache keeps one copy per (identity, version, size).
  // INVALID_ARGUMENT when the name cannot be fetched with this access.
  virtual absl::StatusOr<std::string> Identity(const std::string& name) = 0;

  // The object's version and size, checked with this store's access (see
  // HttpFetcher::Probe for the errors, which name `name`).
  virtual absl::StatusOr<ObjectVersion> Probe(const std::string& name,
                                              const FetchPolicy& policy) = 0;

  // Writes the object's `want.size` bytes to `fd` from offset 0; ABORTED
  // when it is no longer version `want` (see HttpFetcher::Get).
  virtual absl::Status Get(const std::string& name, const ObjectVersion& want,
                           int fd, const FetchPolicy& policy) = 0;

  // What the store's requests did so far.
  virtual FetchTally tally() const = 0;
};

// The store of one job over HTTP(S) and S3: s3:// names are fetched with
// `access` (signed when it holds credentials), http(s):// names unsigned.
// Keeps a libcurl handle per concurrent request, reused between requests.
class HttpStore final : public ObjectStore {
 public:
  explicit HttpStore(FetchAccess access) : access_(std::move(access)) {}
  ~HttpStore() override;

  absl::StatusOr<std::string> Identity(const std::string& name) override;
  absl::StatusOr<ObjectVersion> Probe(const std::string& name,
                                      const FetchPolicy& policy) override;
  absl::Status Get(const std::string& name, const ObjectVersion& want, int fd,
                   const FetchPolicy& policy) override;
  FetchTally tally() const override;

 private:
  // A fetcher no other request is using (made when none is idle), and
  // handing it back.
  std::unique_ptr<HttpFetcher> Take();
  void Give(std::unique_ptr<HttpFetcher> fetcher);
  const FetchAccess& AccessFor(const std::string& name) const;

  const FetchAccess access_;
  const FetchAccess unsigned_;  // http(s):// names
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<HttpFetcher>> idle_ ABSL_GUARDED_BY(mu_);
  FetchTally done_ ABSL_GUARDED_BY(mu_);  // of fetchers handed back
};

}  // namespace stoker

#endif  // STOKER_DAEMON_REMOTE_OBJECT_STORE_H_
