// The shared vocabulary (stoker/vocabulary.h) on the wire (the enums of the
// same names in loader.proto), written once for the daemon and the SDK.
//
// ToWire gives each value's wire enum. FromWire reads one: UNSPECIFIED is
// the wire's documented default (REPLACE, UINT8, BILINEAR, EXCLUSIVE,
// DETACH, AUTO, ERROR), and nullopt means a value this build does not know (or,
// for DType, INT64, which is no image type). Layout, JobState and DatasetKind
// have no
// default: UNSPECIFIED reads as nullopt (an image's layout then follows its
// dtype, see loader.proto).
#ifndef STOKER_COMMON_VOCABULARY_WIRE_H_
#define STOKER_COMMON_VOCABULARY_WIRE_H_

#include <optional>

#include "stoker/v1/loader.pb.h"
#include "stoker/vocabulary.h"

namespace stoker {

v1::OnError ToWire(OnError value);
v1::DType ToWire(DType value);
v1::Layout ToWire(Layout value);
v1::Interpolation ToWire(Interpolation value);
v1::ConsumerMode ToWire(ConsumerMode value);
v1::LagPolicy ToWire(LagPolicy value);
v1::JobState ToWire(JobState value);
v1::DatasetKind ToWire(DatasetKind value);
v1::FieldKind ToWire(FieldKind value);
v1::MissingField ToWire(MissingField value);

std::optional<OnError> FromWire(v1::OnError value);
std::optional<DType> FromWire(v1::DType value);
std::optional<Layout> FromWire(v1::Layout value);
std::optional<Interpolation> FromWire(v1::Interpolation value);
std::optional<ConsumerMode> FromWire(v1::ConsumerMode value);
std::optional<LagPolicy> FromWire(v1::LagPolicy value);
std::optional<JobState> FromWire(v1::JobState value);
std::optional<DatasetKind> FromWire(v1::DatasetKind value);
std::optional<FieldKind> FromWire(v1::FieldKind value);
std::optional<MissingField> FromWire(v1::MissingField value);

}  // namespace stoker

#endif  // STOKER_COMMON_VOCABULARY_WIRE_H_
