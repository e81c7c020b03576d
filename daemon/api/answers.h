// Answers: what each user's unary calls hold in stokerd until the client
// has taken them.
//
// gRPC keeps an answer (the message, and its serialized bytes) until the
// client's HTTP/2 flow control lets it go: a client that pipelines calls
// and reads nothing would make stokerd hold every answer (400 calls of
// GetClassNames' 1 MiB page held 955 MiB). AnswerLedger counts the bytes
// of each user's answers from Finish() until gRPC is done with the call;
// past kMaxAnswerBytesPerUser a user's new calls are refused
// (RESOURCE_EXHAUSTED, a few bytes) until it reads what it asked for. A
// client that reads its answers never comes near the bound.
//
// Thread-safety: AnswerLedger is thread-safe; an AnswerReactor is gRPC's.
#ifndef STOKER_DAEMON_API_ANSWERS_H_
#define STOKER_DAEMON_API_ANSWERS_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message_lite.h"

namespace stoker {

inline constexpr uint64_t kMaxAnswerBytesPerUser = uint64_t{16} << 20;

class AnswerLedger {
 public:
  explicit AnswerLedger(uint64_t max_per_user = kMaxAnswerBytesPerUser)
      : max_per_user_(max_per_user) {}

  // Whether `uid` may have one more answer built now.
  bool MayAnswer(uid_t uid) const;
  void Add(uid_t uid, uint64_t bytes);
  void Remove(uid_t uid, uint64_t bytes);
  // Bytes of `uid`'s answers not yet taken.
  uint64_t held(uid_t uid) const;

 private:
  const uint64_t max_per_user_;
  mutable absl::Mutex mu_;
  std::map<uid_t, uint64_t> held_ ABSL_GUARDED_BY(mu_);
};

// A unary call's reactor whose answer counts against its user's ledger
// until gRPC is done with the call. Deletes itself in OnDone().
class AnswerReactor final : public grpc::ServerUnaryReactor {
 public:
  // A reactor for a call of `uid` (nullopt: not accounted, as for a caller
  // whose credentials are unknown, who gets no answer of size anyway). It
  // is finished at once with RESOURCE_EXHAUSTED when the user is at its
  // bound: then refused() and the method returns it as it is.
  static AnswerReactor* Open(AnswerLedger* ledger, std::optional<uid_t> uid);
  bool refused() const { return refused_; }
  // Finishes the call: `response` (counted while in flight) if `status` is
  // OK.
  void Answer(const google::protobuf::MessageLite& response,
              const grpc::Status& status);
  void OnDone() override;

 private:
  AnswerReactor(AnswerLedger* ledger, std::optional<uid_t> uid)
      : ledger_(ledger), uid_(uid) {}
  AnswerLedger* const ledger_;
  const std::optional<uid_t> uid_;
  uint64_t bytes_ = 0;
  bool refused_ = false;
};

}  // namespace stoker

#endif  // STOKER_DAEMON_API_ANSWERS_H_
