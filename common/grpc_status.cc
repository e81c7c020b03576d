#include "common/grpc_status.h"

#include <string>

#include "common/safe_text.h"

namespace stoker {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // Messages name files and jobs: escaped, so every client can read them.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      SafeText(std::string(status.message())));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

}  // namespace stoker
