// Errors of one op of a JobSpec's pipeline, named by position, op and
// field: "pipeline[1].center_crop.height must be ...".
#ifndef STOKER_DAEMON_SPEC_OP_ERROR_H_
#define STOKER_DAEMON_SPEC_OP_ERROR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/vocabulary_wire.h"

namespace stoker {

// Largest output side a pipeline may ask for.
inline constexpr uint32_t kMaxSide = 8192;

class OpError {
 public:
  OpError(int index, const char* op)
      : prefix_(absl::StrCat("pipeline[", index, "].", op)) {}
  absl::Status Bad(const std::string& field, const std::string& why) const {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix_, ".", field, " ", why));
  }
  absl::Status Side(const std::string& field, uint32_t v) const {
    if (v >= 1 && v <= kMaxSide) return absl::OkStatus();
    return Bad(field, absl::StrCat("must be in [1, ", kMaxSide, "], got ", v));
  }

 private:
  std::string prefix_;
};

// An optional probability field: `fallback` when unset, else in [0, 1].
inline absl::Status ParseProbability(const OpError& e, bool has, float value,
                                     double fallback, double* out) {
  *out = has ? value : fallback;
  if (*out >= 0 && *out <= 1) return absl::OkStatus();
  return e.Bad("p", absl::StrCat("must be in [0, 1], got ", *out));
}

inline absl::StatusOr<Interpolation> ParseInterpolation(
    const OpError& e, v1::Interpolation value) {
  if (std::optional<Interpolation> known = FromWire(value)) return *known;
  return e.Bad("interpolation", absl::StrCat("has unknown value ", value));
}

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_OP_ERROR_H_
