// stokerctl's connection to stokerd, and the sentences it makes of gRPC
// errors.
#ifndef STOKER_CLIENT_STOKERCTL_CONNECTION_H_
#define STOKER_CLIENT_STOKERCTL_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker::ctl {

class Connection {
 public:
  explicit Connection(const std::string& target);

  v1::Loader::Stub& loader() { return *loader_; }
  grpc::health::v1::Health::Stub& health() { return *health_; }
  // A context with a 5 s deadline.
  static std::unique_ptr<grpc::ClientContext> Context();
  // "cannot <doing>: <why, in words>" for a failed call.
  std::string Explain(const grpc::Status& status,
                      const std::string& doing) const;

 private:
  const std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Loader::Stub> loader_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

}  // namespace stoker::ctl

#endif  // STOKER_CLIENT_STOKERCTL_CONNECTION_H_
