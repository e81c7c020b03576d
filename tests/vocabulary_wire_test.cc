// The shared vocabulary on the wire (common/vocabulary_wire.h): every value
// round-trips, UNSPECIFIED reads as the wire's documented default (or as
// nothing, for the enums without one), and a value this build does not
// know reads as nothing.
#include "common/vocabulary_wire.h"

#include <initializer_list>

#include "gtest/gtest.h"

namespace stoker {
namespace {

template <typename Local>
void ExpectRoundTrips(std::initializer_list<Local> values) {
  for (Local value : values) {
    const auto wire = ToWire(value);
    EXPECT_NE(int(wire), 0) << int(value) << " goes out as UNSPECIFIED";
    EXPECT_EQ(FromWire(wire), value) << int(value);
  }
}

TEST(VocabularyWire, EveryValueRoundTrips) {
  ExpectRoundTrips({OnError::kReplace, OnError::kFail});
  ExpectRoundTrips({DType::kUInt8, DType::kFloat32, DType::kFloat16});
  ExpectRoundTrips({Layout::kNHWC, Layout::kNCHW});
  ExpectRoundTrips({Interpolation::kBilinear, Interpolation::kNearest,
                    Interpolation::kBicubic});
  ExpectRoundTrips({ConsumerMode::kExclusive, ConsumerMode::kBroadcast,
                    ConsumerMode::kPartition});
  ExpectRoundTrips({LagPolicy::kDetach, LagPolicy::kSkip});
  ExpectRoundTrips(
      {JobState::kRunning, JobState::kFinished, JobState::kFailed});
  ExpectRoundTrips({DatasetKind::kImageFolder, DatasetKind::kTarShards,
                    DatasetKind::kManifest});
  ExpectRoundTrips({FieldKind::kImage, FieldKind::kBytes, FieldKind::kMask});
  ExpectRoundTrips({MissingField::kError, MissingField::kSkip});
  // kAuto is the wire's UNSPECIFIED, both ways.
  EXPECT_EQ(ToWire(FieldKind::kAuto), v1::FIELD_KIND_UNSPECIFIED);
  EXPECT_EQ(FromWire(v1::FIELD_KIND_UNSPECIFIED), FieldKind::kAuto);
}

TEST(VocabularyWire, UnspecifiedReadsAsTheDocumentedDefault) {
  EXPECT_EQ(FromWire(v1::ON_ERROR_UNSPECIFIED), OnError::kReplace);
  EXPECT_EQ(FromWire(v1::DTYPE_UNSPECIFIED), DType::kUInt8);
  EXPECT_EQ(FromWire(v1::INTERPOLATION_UNSPECIFIED), Interpolation::kBilinear);
  EXPECT_EQ(FromWire(v1::CONSUMER_MODE_UNSPECIFIED), ConsumerMode::kExclusive);
  EXPECT_EQ(FromWire(v1::LAG_POLICY_UNSPECIFIED), LagPolicy::kDetach);
  EXPECT_EQ(FromWire(v1::MISSING_FIELD_UNSPECIFIED), MissingField::kError);
  // No default: the layout follows the dtype; a state or kind is named.
  EXPECT_EQ(FromWire(v1::LAYOUT_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(FromWire(v1::JOB_STATE_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(FromWire(v1::DATASET_KIND_UNSPECIFIED), std::nullopt);
}

TEST(VocabularyWire, UnknownValuesReadAsNothing) {
  EXPECT_EQ(FromWire(v1::DTYPE_INT64), std::nullopt);  // no image type
  EXPECT_EQ(FromWire(static_cast<v1::OnError>(77)), std::nullopt);
  EXPECT_EQ(FromWire(static_cast<v1::DType>(77)), std::nullopt);
  EXPECT_EQ(FromWire(static_cast<v1::Interpolation>(77)), std::nullopt);
  EXPECT_EQ(FromWire(static_cast<v1::ConsumerMode>(77)), std::nullopt);
  EXPECT_EQ(FromWire(static_cast<v1::LagPolicy>(77)), std::nullopt);
  EXPECT_EQ(FromWire(static_cast<v1::FieldKind>(77)), std::nullopt);
  EXPECT_EQ(FromWire(static_cast<v1::MissingField>(77)), std::nullopt);
}

}  // namespace
}  // namespace stoker
