#include "common/vocabulary_wire.h"

#include <span>

namespace stoker {
namespace {

// One enum's values and their wire values. ToWire takes the first pair of
// a value; FromWire the first pair of a wire value, so a later pair may
// read UNSPECIFIED as the wire's documented default.
template <typename Local, typename Wire>
struct Pair {
  Local local;
  Wire wire;
};

template <typename Local, typename Wire>
Wire Find(std::span<const Pair<Local, Wire>> table, Local value) {
  for (const auto& pair : table) {
    if (pair.local == value) return pair.wire;
  }
  return table.front().wire;  // every value has a pair; never reached
}

template <typename Local, typename Wire>
std::optional<Local> Find(std::span<const Pair<Local, Wire>> table,
                          Wire value) {
  for (const auto& pair : table) {
    if (pair.wire == value) return pair.local;
  }
  return std::nullopt;
}

constexpr Pair<OnError, v1::OnError> kOnError[] = {
    {OnError::kReplace, v1::ON_ERROR_REPLACE},
    {OnError::kFail, v1::ON_ERROR_FAIL},
    {OnError::kReplace, v1::ON_ERROR_UNSPECIFIED}};

constexpr Pair<DType, v1::DType> kDType[] = {
    {DType::kUInt8, v1::DTYPE_UINT8},
    {DType::kFloat32, v1::DTYPE_FLOAT32},
    {DType::kFloat16, v1::DTYPE_FLOAT16},
    {DType::kUInt8, v1::DTYPE_UNSPECIFIED}};  // INT64 is no image type

constexpr Pair<Layout, v1::Layout> kLayout[] = {
    {Layout::kNHWC, v1::LAYOUT_NHWC}, {Layout::kNCHW, v1::LAYOUT_NCHW}};

constexpr Pair<Interpolation, v1::Interpolation> kInterpolation[] = {
    {Interpolation::kBilinear, v1::INTERPOLATION_BILINEAR},
    {Interpolation::kNearest, v1::INTERPOLATION_NEAREST},
    {Interpolation::kBicubic, v1::INTERPOLATION_BICUBIC},
    {Interpolation::kBilinear, v1::INTERPOLATION_UNSPECIFIED}};

constexpr Pair<ConsumerMode, v1::ConsumerMode> kConsumerMode[] = {
    {ConsumerMode::kExclusive, v1::CONSUMER_MODE_EXCLUSIVE},
    {ConsumerMode::kBroadcast, v1::CONSUMER_MODE_BROADCAST},
    {ConsumerMode::kPartition, v1::CONSUMER_MODE_PARTITION},
    {ConsumerMode::kExclusive, v1::CONSUMER_MODE_UNSPECIFIED}};

constexpr Pair<LagPolicy, v1::LagPolicy> kLagPolicy[] = {
    {LagPolicy::kDetach, v1::LAG_POLICY_DETACH},
    {LagPolicy::kSkip, v1::LAG_POLICY_SKIP},
    {LagPolicy::kDetach, v1::LAG_POLICY_UNSPECIFIED}};

constexpr Pair<JobState, v1::JobState> kJobState[] = {
    {JobState::kRunning, v1::JOB_STATE_RUNNING},
    {JobState::kFinished, v1::JOB_STATE_FINISHED},
    {JobState::kFailed, v1::JOB_STATE_FAILED}};

constexpr Pair<DatasetKind, v1::DatasetKind> kDatasetKind[] = {
    {DatasetKind::kImageFolder, v1::DATASET_KIND_IMAGE_FOLDER},
    {DatasetKind::kTarShards, v1::DATASET_KIND_TAR_SHARDS},
    {DatasetKind::kManifest, v1::DATASET_KIND_MANIFEST}};

constexpr Pair<FieldKind, v1::FieldKind> kFieldKind[] = {
    {FieldKind::kAuto, v1::FIELD_KIND_UNSPECIFIED},
    {FieldKind::kImage, v1::FIELD_KIND_IMAGE},
    {FieldKind::kBytes, v1::FIELD_KIND_BYTES},
    {FieldKind::kMask, v1::FIELD_KIND_MASK}};

constexpr Pair<MissingField, v1::MissingField> kMissingField[] = {
    {MissingField::kError, v1::MISSING_FIELD_ERROR},
    {MissingField::kSkip, v1::MISSING_FIELD_SKIP},
    {MissingField::kError, v1::MISSING_FIELD_UNSPECIFIED}};

}  // namespace

v1::OnError ToWire(OnError value) {
  return Find<OnError, v1::OnError>(kOnError, value);
}

std::optional<OnError> FromWire(v1::OnError value) {
  return Find<OnError, v1::OnError>(kOnError, value);
}

v1::DType ToWire(DType value) { return Find<DType, v1::DType>(kDType, value); }

std::optional<DType> FromWire(v1::DType value) {
  return Find<DType, v1::DType>(kDType, value);
}

v1::Layout ToWire(Layout value) {
  return Find<Layout, v1::Layout>(kLayout, value);
}

std::optional<Layout> FromWire(v1::Layout value) {
  return Find<Layout, v1::Layout>(kLayout, value);
}

v1::Interpolation ToWire(Interpolation value) {
  return Find<Interpolation, v1::Interpolation>(kInterpolation, value);
}

std::optional<Interpolation> FromWire(v1::Interpolation value) {
  return Find<Interpolation, v1::Interpolation>(kInterpolation, value);
}

v1::ConsumerMode ToWire(ConsumerMode value) {
  return Find<ConsumerMode, v1::ConsumerMode>(kConsumerMode, value);
}

std::optional<ConsumerMode> FromWire(v1::ConsumerMode value) {
  return Find<ConsumerMode, v1::ConsumerMode>(kConsumerMode, value);
}

v1::LagPolicy ToWire(LagPolicy value) {
  return Find<LagPolicy, v1::LagPolicy>(kLagPolicy, value);
}

std::optional<LagPolicy> FromWire(v1::LagPolicy value) {
  return Find<LagPolicy, v1::LagPolicy>(kLagPolicy, value);
}

v1::JobState ToWire(JobState value) {
  return Find<JobState, v1::JobState>(kJobState, value);
}

std::optional<JobState> FromWire(v1::JobState value) {
  return Find<JobState, v1::JobState>(kJobState, value);
}

v1::DatasetKind ToWire(DatasetKind value) {
  return Find<DatasetKind, v1::DatasetKind>(kDatasetKind, value);
}

std::optional<DatasetKind> FromWire(v1::DatasetKind value) {
  return Find<DatasetKind, v1::DatasetKind>(kDatasetKind, value);
}

v1::FieldKind ToWire(FieldKind value) {
  return Find<FieldKind, v1::FieldKind>(kFieldKind, value);
}

std::optional<FieldKind> FromWire(v1::FieldKind value) {
  return Find<FieldKind, v1::FieldKind>(kFieldKind, value);
}

v1::MissingField ToWire(MissingField value) {
  return Find<MissingField, v1::MissingField>(kMissingField, value);
}

std::optional<MissingField> FromWire(v1::MissingField value) {
  return Find<MissingField, v1::MissingField>(kMissingField, value);
}

}  // namespace stoker
