#include "client/stokerctl/connection.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/naming.h"
#include "common/socket_access.h"

namespace stoker::ctl {

Connection::Connection(const std::string& target)
    : target_(target),
      channel_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())),
      loader_(v1::Loader::NewStub(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)) {}

std::unique_ptr<grpc::ClientContext> Connection::Context() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(5));
  return context;
}

std::string Connection::Explain(const grpc::Status& status,
                                const std::string& doing) const {
  const std::string& message = status.error_message();
  std::string path = SocketPathFromTarget(target_);
  if (path.empty()) path = target_;
  std::string why;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      if (std::string access = ExplainSocketAccess(path); !access.empty()) {
        why = std::move(access);
      } else if (absl::StrContains(message, "Connection refused")) {
        why = absl::StrCat("nothing accepts connections at ", path,
                           ". stokerd is not running: `systemctl status "
                           "stokerd`");
      } else if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        why = absl::StrCat("stokerd at ", path,
                           " did not answer within 5 seconds");
      } else {
        why = absl::StrCat("stokerd at ", path, " is unavailable (", message,
                           ")");
      }
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
      why = absl::StrCat("stokerd refused: ", message);
      break;
    default:
      why = message.empty() ? absl::StrCat("error ", status.error_code())
                            : message;
  }
  if (!why.empty() && why.back() == '.') why.pop_back();
  return absl::StrCat("cannot ", doing, ": ", why, ".");
}

}  // namespace stoker::ctl
