// Client::Impl, exposed to the SDK's own sources and tests (not installed).
#ifndef STOKER_CLIENT_SRC_CLIENT_IMPL_H_
#define STOKER_CLIENT_SRC_CLIENT_IMPL_H_

#include <memory>

#include "stoker/client.h"
#include "stoker/v1/loader.grpc.pb.h"

namespace stoker {

class Client::Impl {
 public:
  explicit Impl(std::unique_ptr<v1::Loader::StubInterface> stub)
      : stub_(std::move(stub)) {}
  v1::Loader::StubInterface* stub() { return stub_.get(); }

 private:
  std::unique_ptr<v1::Loader::StubInterface> stub_;
};

// A Client over any stub (tests pass a mock).
std::unique_ptr<Client> MakeClient(std::unique_ptr<Client::Impl> impl);

}  // namespace stoker

#endif  // STOKER_CLIENT_SRC_CLIENT_IMPL_H_
