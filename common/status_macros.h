// Early-return helpers for absl::Status / absl::StatusOr (Abseil 20220623
// ships none).
//
//   STOKER_RETURN_IF_ERROR(WriteHeader());
//   STOKER_ASSIGN_OR_RETURN(auto ring, Ring::Create(name, geometry));
#ifndef STOKER_COMMON_STATUS_MACROS_H_
#define STOKER_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define STOKER_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status stoker_status_ = (expr);          \
    if (!stoker_status_.ok()) return stoker_status_; \
  } while (0)

#define STOKER_CONCAT_INNER_(a, b) a##b
#define STOKER_CONCAT_(a, b) STOKER_CONCAT_INNER_(a, b)

#define STOKER_ASSIGN_OR_RETURN(lhs, rexpr)                                \
  STOKER_ASSIGN_OR_RETURN_IMPL_(STOKER_CONCAT_(stoker_or_, __LINE__), lhs, \
                                rexpr)

#define STOKER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = std::move(tmp).value()

#endif  // STOKER_COMMON_STATUS_MACROS_H_
