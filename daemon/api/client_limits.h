// ClientLimits: per-user accounting of outstanding batches (credits asked
// for plus batches leased and not yet released, over all of a user's
// Consume streams), so that one user cannot pin every slot of the node.
//
// Limits are keyed by the user the kernel reports for the connection ("uid
// 1000"), never by what a client calls itself: the "stoker-client" request
// metadata (ClientOf) only labels a client in logs and stats.
//
// Thread-safety: thread-safe.
#ifndef STOKER_DAEMON_API_CLIENT_LIMITS_H_
#define STOKER_DAEMON_API_CLIENT_LIMITS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/naming.h"

namespace stoker {

// The client named by a request's metadata ("anonymous" without one).
std::string ClientOf(const grpc::CallbackServerContext& context);

class ClientLimits {
 public:
  explicit ClientLimits(uint32_t max_outstanding)
      : max_outstanding_(max_outstanding) {}

  // Counts `n` more outstanding batches for `client`, or RESOURCE_EXHAUSTED
  // (counting nothing) if that would pass the limit.
  absl::Status Reserve(const std::string& client, uint64_t n);
  // Counts as many of `n` as fit under the limit; returns how many.
  uint64_t ReserveUpTo(const std::string& client, uint64_t n);
  void Return(const std::string& client, uint64_t n);
  uint64_t outstanding(const std::string& client) const;
  // A new limit (SIGHUP): clients above it keep what they hold but get no
  // more until they are below it.
  void SetMax(uint32_t max_outstanding);

 private:
  mutable absl::Mutex mu_;
  uint32_t max_outstanding_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> outstanding_ ABSL_GUARDED_BY(mu_);
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_CLIENT_LIMITS_H_
