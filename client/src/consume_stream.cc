#include "client/src/consume_stream.h"

#include <algorithm>
#include <utility>

#include "common/grpc_status.h"
#include "common/naming.h"

namespace stoker::internal {
namespace {

// How long Close() waits for the daemon to end a half-closed stream before
// cancelling it.
constexpr absl::Duration kCloseGrace = absl::Seconds(5);

}  // namespace

absl::StatusOr<std::unique_ptr<ConsumeStream>> ConsumeStream::Attach(
    v1::Loader::StubInterface* stub, const std::string& client_id,
    const std::string& job_id, const ConsumerOptions& options,
    v1::Attached* attached) {
  std::unique_ptr<ConsumeStream> s(new ConsumeStream());
  s->context_.AddMetadata(kClientMetadataKey, client_id);
  s->stream_ = stub->Consume(&s->context_);
  v1::ConsumeRequest attach;
  attach.mutable_attach()->set_job_id(job_id);
  attach.mutable_attach()->set_name(options.name);
  // With no credit the daemon would never send anything.
  attach.mutable_attach()->set_credits(std::max<uint32_t>(options.prefetch, 1));
  v1::ConsumeResponse reply;
  if (!s->stream_->Write(attach) || !s->stream_->Read(&reply)) {
    const grpc::Status status = s->stream_->Finish();
    return status.ok() ? absl::UnavailableError("the daemon closed the stream")
                       : FromGrpcStatus(status);
  }
  if (!reply.has_attached()) {
    s->context_.TryCancel();
    s->stream_->Finish();
    return absl::InternalError("the daemon did not answer attach first");
  }
  *attached = std::move(*reply.mutable_attached());
  return s;
}

ConsumeStream::~ConsumeStream() { Close(); }

absl::Status ConsumeStream::Abort(absl::Status why) {
  stream_->WritesDone();
  v1::ConsumeResponse reply;
  while (stream_->Read(&reply)) {
  }
  const grpc::Status status = stream_->Finish();
  return status.ok() ? std::move(why) : FromGrpcStatus(status);
}

void ConsumeStream::Start() {
  reader_ = std::thread([this] { ReadLoop(); });
  writer_ = std::thread([this] { WriteLoop(); });
}

bool ConsumeStream::Open() const { return !closing_ && !read_done_; }

bool ConsumeStream::HasWork() const {
  return !outbox_.empty() || closing_ || read_done_;
}

bool ConsumeStream::HandleReady() const {
  return !handles_.empty() || end_of_job_ || finished_;
}

void ConsumeStream::ReadLoop() {
  v1::ConsumeResponse response;
  while (stream_->Read(&response)) {
    absl::MutexLock lock(&mu_);
    if (response.has_batch()) {
      handles_.push_back(std::move(*response.mutable_batch()));
    } else if (response.has_end_of_job()) {
      end_of_job_ = true;
    }
  }
  absl::MutexLock lock(&mu_);
  read_done_ = true;
}

void ConsumeStream::WriteLoop() {
  for (;;) {
    v1::ConsumeRequest request;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &ConsumeStream::HasWork));
      if (read_done_ || outbox_.empty()) break;  // closing, all flushed
      request = std::move(outbox_.front());
      outbox_.pop_front();
    }
    stream_->Write(request);
  }
  bool read_done;
  {
    absl::MutexLock lock(&mu_);
    read_done = read_done_;
  }
  Finish(read_done);
}

void ConsumeStream::Finish(bool read_done) {
  if (!read_done) {
    stream_->WritesDone();
    bool ended;
    {
      absl::MutexLock lock(&mu_);
      ended = mu_.AwaitWithTimeout(absl::Condition(&read_done_), kCloseGrace);
    }
    if (!ended) {
      context_.TryCancel();
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&read_done_));
    }
  }
  const grpc::Status status = stream_->Finish();
  absl::MutexLock lock(&mu_);
  final_status_ = FromGrpcStatus(status);
  finished_ = true;
}

void ConsumeStream::Send(v1::ConsumeRequest request) {
  absl::MutexLock lock(&mu_);
  if (!Open()) return;
  outbox_.push_back(std::move(request));
}

bool ConsumeStream::AwaitHandle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(
      absl::Condition(this, &ConsumeStream::HandleReady), deadline);
}

void ConsumeStream::DropQueued() {
  absl::MutexLock lock(&mu_);
  handles_.clear();
}

std::optional<ConsumeStream::Popped> ConsumeStream::Pop() {
  absl::MutexLock lock(&mu_);
  // A stream the daemon ended with an error (this consumer was detached:
  // lease limit, lag, job deleted, daemon stopping) took its leases with
  // it: batches still queued here may already be another consumer's.
  if (finished_ && !final_status_.ok()) handles_.clear();
  if (handles_.empty()) return std::nullopt;
  Popped next{std::move(handles_.front()), Open()};
  handles_.pop_front();
  if (next.open) {
    v1::ConsumeRequest credit;
    credit.mutable_credit()->set_credits(1);
    outbox_.push_back(std::move(credit));
  }
  return next;
}

ConsumeStream::End ConsumeStream::end() const {
  absl::MutexLock lock(&mu_);
  return {end_of_job_, final_status_};
}

absl::Status ConsumeStream::final_status() const {
  absl::MutexLock lock(&mu_);
  return final_status_;
}

void ConsumeStream::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    closing_ = true;
  }
  if (writer_.joinable()) writer_.join();
  if (reader_.joinable()) reader_.join();
}

}  // namespace stoker::internal
