#include "daemon/api/answers.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace stoker {

bool AnswerLedger::MayAnswer(uid_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(uid);
  return it == held_.end() || it->second < max_per_user_;
}

void AnswerLedger::Add(uid_t uid, uint64_t bytes) {
  if (bytes == 0) return;
  absl::MutexLock lock(&mu_);
  held_[uid] += bytes;
}

void AnswerLedger::Remove(uid_t uid, uint64_t bytes) {
  if (bytes == 0) return;
  absl::MutexLock lock(&mu_);
  auto it = held_.find(uid);
  if (it == held_.end()) return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0) held_.erase(it);
}

uint64_t AnswerLedger::held(uid_t uid) const {
  absl::MutexLock lock(&mu_);
  auto it = held_.find(uid);
  return it == held_.end() ? 0 : it->second;
}

AnswerReactor* AnswerReactor::Open(AnswerLedger* ledger,
                                   std::optional<uid_t> uid) {
  auto* reactor = new AnswerReactor(ledger, uid);
  if (uid && !ledger->MayAnswer(*uid)) {
    reactor->refused_ = true;
    reactor->Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("uid ", *uid, " has ", ledger->held(*uid) >> 20,
                     " MiB of ", kUnreadAnswers,
                     ": read them before calling again")));
  }
  return reactor;
}

void AnswerReactor::Answer(const google::protobuf::MessageLite& response,
                           const grpc::Status& status) {
  if (status.ok() && uid_) {
    bytes_ = response.ByteSizeLong();
    ledger_->Add(*uid_, bytes_);
  }
  Finish(status);
}

void AnswerReactor::OnDone() {
  if (uid_) ledger_->Remove(*uid_, bytes_);
  delete this;
}

}  // namespace stoker
