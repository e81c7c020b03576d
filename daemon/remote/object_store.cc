#include "daemon/remote/object_store.h"

#include "daemon/remote/remote_url.h"

namespace stoker {
namespace {

void Add(const FetchTally& more, FetchTally* sum) {
  sum->requests += more.requests;
  sum->retries += more.retries;
  sum->resumed += more.resumed;
  sum->bytes += more.bytes;
}

}  // namespace

HttpStore::~HttpStore() = default;

const FetchAccess& HttpStore::AccessFor(const std::string& name) const {
  return IsS3Name(name) ? access_ : unsigned_;
}

absl::StatusOr<std::string> HttpStore::Identity(const std::string& name) {
  return FetchUrlOf(name, AccessFor(name));
}

absl::StatusOr<ObjectVersion> HttpStore::Probe(const std::string& name,
                                               const FetchPolicy& policy) {
  const FetchAccess& access = AccessFor(name);
  absl::StatusOr<std::string> url = FetchUrlOf(name, access);
  if (!url.ok()) return url.status();
  std::unique_ptr<HttpFetcher> fetcher = Take();
  absl::StatusOr<ObjectVersion> version =
      fetcher->Probe(*url, name, access, policy);
  Give(std::move(fetcher));
  return version;
}

absl::Status HttpStore::Get(const std::string& name, const ObjectVersion& want,
                            int fd, const FetchPolicy& policy) {
  const FetchAccess& access = AccessFor(name);
  absl::StatusOr<std::string> url = FetchUrlOf(name, access);
  if (!url.ok()) return url.status();
  std::unique_ptr<HttpFetcher> fetcher = Take();
  absl::Status got = fetcher->Get(*url, name, access, want, fd, policy);
  Give(std::move(fetcher));
  return got;
}

FetchTally HttpStore::tally() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

std::unique_ptr<HttpFetcher> HttpStore::Take() {
  absl::MutexLock lock(&mu_);
  if (idle_.empty()) return std::make_unique<HttpFetcher>();
  std::unique_ptr<HttpFetcher> fetcher = std::move(idle_.back());
  idle_.pop_back();
  return fetcher;
}

void HttpStore::Give(std::unique_ptr<HttpFetcher> fetcher) {
  absl::MutexLock lock(&mu_);
  // A fetcher's tally counts from its making: take what it did since it
  // was last handed back.
  Add(fetcher->TakeTally(), &done_);
  idle_.push_back(std::move(fetcher));
}

}  // namespace stoker
