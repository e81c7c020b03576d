// FakeStore: an in-memory ObjectStore for the shard cache's and the
// dataset sources' unit tests. Objects are (name -> bytes, version); it
// refuses names it was told to, can replace an object while it is being
// fetched, and counts what it served, so that tests can say how many
// bytes a run fetched.
#ifndef STOKER_TESTS_FAKE_OBJECT_STORE_H_
#define STOKER_TESTS_FAKE_OBJECT_STORE_H_

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "daemon/remote/object_store.h"

namespace stoker::testing {

class FakeStore final : public ObjectStore {
 public:
  // Puts (or replaces, as a new version) the object `name`.
  void Put(const std::string& name, std::string bytes) {
    absl::MutexLock lock(&mu_);
    Object& object = objects_[name];
    object.bytes = std::move(bytes);
    object.version = absl::StrCat("v", ++versions_);
  }
  // Requests for `name` are refused as a 403 refuses them.
  void Deny(const std::string& name) {
    absl::MutexLock lock(&mu_);
    denied_.insert(name);
  }
  // Called (without the store's lock) at the start of each Get.
  void OnGet(std::function<void(const std::string& name)> hook) {
    absl::MutexLock lock(&mu_);
    on_get_ = std::move(hook);
  }

  uint64_t probes() const {
    absl::MutexLock lock(&mu_);
    return probes_;
  }
  uint64_t gets() const {
    absl::MutexLock lock(&mu_);
    return gets_;
  }

  absl::StatusOr<std::string> Identity(const std::string& name) override {
    return "fake:" + name;
  }

  absl::StatusOr<ObjectVersion> Probe(const std::string& name,
                                      const FetchPolicy&) override {
    absl::MutexLock lock(&mu_);
    ++probes_;
    ++tally_.requests;
    if (denied_.contains(name)) {
      return absl::PermissionDeniedError(
          absl::StrCat("remote shard '", name, "': HTTP 403"));
    }
    auto it = objects_.find(name);
    if (it == objects_.end()) {
      return absl::NotFoundError(
          absl::StrCat("remote shard '", name, "': HTTP 404"));
    }
    return ObjectVersion{it->second.version, it->second.bytes.size()};
  }

  absl::Status Get(const std::string& name, const ObjectVersion& want, int fd,
                   const FetchPolicy&) override {
    std::function<void(const std::string&)> hook;
    {
      absl::MutexLock lock(&mu_);
      hook = on_get_;
    }
    if (hook) hook(name);
    absl::MutexLock lock(&mu_);
    ++gets_;
    ++tally_.requests;
    auto it = objects_.find(name);
    if (it == objects_.end() || it->second.version != want.version) {
      return absl::AbortedError(
          absl::StrCat("remote shard '", name, "' changed while fetched"));
    }
    const std::string& bytes = it->second.bytes;
    if (::pwrite(fd, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size())) {
      return absl::InternalError("pwrite");
    }
    tally_.bytes += bytes.size();
    return absl::OkStatus();
  }

  FetchTally tally() const override {
    absl::MutexLock lock(&mu_);
    return tally_;
  }

 private:
  struct Object {
    std::string bytes;
    std::string version;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Object> objects_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> denied_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&)> on_get_ ABSL_GUARDED_BY(mu_);
  uint64_t versions_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t probes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t gets_ ABSL_GUARDED_BY(mu_) = 0;
  FetchTally tally_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker::testing

#endif  // STOKER_TESTS_FAKE_OBJECT_STORE_H_
