#include "common/vocabulary_wire.h"

namespace stoker {

v1::OnError ToWire(OnError value) {
  return value == OnError::kFail ? v1::ON_ERROR_FAIL : v1::ON_ERROR_REPLACE;
}

v1::DType ToWire(DType value) {
  switch (value) {
    case DType::kFloat32:
      return v1::DTYPE_FLOAT32;
    case DType::kFloat16:
      return v1::DTYPE_FLOAT16;
    case DType::kUInt8:
      break;
  }
  return v1::DTYPE_UINT8;
}

v1::Layout ToWire(Layout value) {
  return value == Layout::kNHWC ? v1::LAYOUT_NHWC : v1::LAYOUT_NCHW;
}

v1::Interpolation ToWire(Interpolation value) {
  switch (value) {
    case Interpolation::kNearest:
      return v1::INTERPOLATION_NEAREST;
    case Interpolation::kBicubic:
      return v1::INTERPOLATION_BICUBIC;
    case Interpolation::kBilinear:
      break;
  }
  return v1::INTERPOLATION_BILINEAR;
}

v1::ConsumerMode ToWire(ConsumerMode value) {
  switch (value) {
    case ConsumerMode::kBroadcast:
      return v1::CONSUMER_MODE_BROADCAST;
    case ConsumerMode::kPartition:
      return v1::CONSUMER_MODE_PARTITION;
    case ConsumerMode::kExclusive:
      break;
  }
  return v1::CONSUMER_MODE_EXCLUSIVE;
}

v1::LagPolicy ToWire(LagPolicy value) {
  return value == LagPolicy::kSkip ? v1::LAG_POLICY_SKIP
                                   : v1::LAG_POLICY_DETACH;
}

v1::JobState ToWire(JobState value) {
  switch (value) {
    case JobState::kFinished:
      return v1::JOB_STATE_FINISHED;
    case JobState::kFailed:
      return v1::JOB_STATE_FAILED;
    case JobState::kRunning:
      break;
  }
  return v1::JOB_STATE_RUNNING;
}

std::optional<OnError> FromWire(v1::OnError value) {
  switch (value) {
    case v1::ON_ERROR_UNSPECIFIED:
    case v1::ON_ERROR_REPLACE:
      return OnError::kReplace;
    case v1::ON_ERROR_FAIL:
      return OnError::kFail;
    default:
      return std::nullopt;
  }
}

std::optional<DType> FromWire(v1::DType value) {
  switch (value) {
    case v1::DTYPE_UNSPECIFIED:
    case v1::DTYPE_UINT8:
      return DType::kUInt8;
    case v1::DTYPE_FLOAT32:
      return DType::kFloat32;
    case v1::DTYPE_FLOAT16:
      return DType::kFloat16;
    default:
      return std::nullopt;
  }
}

std::optional<Layout> FromWire(v1::Layout value) {
  switch (value) {
    case v1::LAYOUT_NHWC:
      return Layout::kNHWC;
    case v1::LAYOUT_NCHW:
      return Layout::kNCHW;
    default:
      return std::nullopt;
  }
}

std::optional<Interpolation> FromWire(v1::Interpolation value) {
  switch (value) {
    case v1::INTERPOLATION_UNSPECIFIED:
    case v1::INTERPOLATION_BILINEAR:
      return Interpolation::kBilinear;
    case v1::INTERPOLATION_NEAREST:
      return Interpolation::kNearest;
    case v1::INTERPOLATION_BICUBIC:
      return Interpolation::kBicubic;
    default:
      return std::nullopt;
  }
}

std::optional<ConsumerMode> FromWire(v1::ConsumerMode value) {
  switch (value) {
    case v1::CONSUMER_MODE_UNSPECIFIED:
    case v1::CONSUMER_MODE_EXCLUSIVE:
      return ConsumerMode::kExclusive;
    case v1::CONSUMER_MODE_BROADCAST:
      return ConsumerMode::kBroadcast;
    case v1::CONSUMER_MODE_PARTITION:
      return ConsumerMode::kPartition;
    default:
      return std::nullopt;
  }
}

std::optional<LagPolicy> FromWire(v1::LagPolicy value) {
  switch (value) {
    case v1::LAG_POLICY_UNSPECIFIED:
    case v1::LAG_POLICY_DETACH:
      return LagPolicy::kDetach;
    case v1::LAG_POLICY_SKIP:
      return LagPolicy::kSkip;
    default:
      return std::nullopt;
  }
}

std::optional<JobState> FromWire(v1::JobState value) {
  switch (value) {
    case v1::JOB_STATE_RUNNING:
      return JobState::kRunning;
    case v1::JOB_STATE_FINISHED:
      return JobState::kFinished;
    case v1::JOB_STATE_FAILED:
      return JobState::kFailed;
    default:
      return std::nullopt;
  }
}

v1::DatasetKind ToWire(DatasetKind value) {
  switch (value) {
    case DatasetKind::kTarShards:
      return v1::DATASET_KIND_TAR_SHARDS;
    case DatasetKind::kManifest:
      return v1::DATASET_KIND_MANIFEST;
    case DatasetKind::kImageFolder:
      break;
  }
  return v1::DATASET_KIND_IMAGE_FOLDER;
}

std::optional<DatasetKind> FromWire(v1::DatasetKind value) {
  switch (value) {
    case v1::DATASET_KIND_IMAGE_FOLDER:
      return DatasetKind::kImageFolder;
    case v1::DATASET_KIND_TAR_SHARDS:
      return DatasetKind::kTarShards;
    case v1::DATASET_KIND_MANIFEST:
      return DatasetKind::kManifest;
    default:
      return std::nullopt;
  }
}

v1::FieldKind ToWire(FieldKind value) {
  switch (value) {
    case FieldKind::kImage:
      return v1::FIELD_KIND_IMAGE;
    case FieldKind::kBytes:
      return v1::FIELD_KIND_BYTES;
    case FieldKind::kMask:
      return v1::FIELD_KIND_MASK;
    case FieldKind::kAuto:
      break;
  }
  return v1::FIELD_KIND_UNSPECIFIED;
}

std::optional<FieldKind> FromWire(v1::FieldKind value) {
  switch (value) {
    case v1::FIELD_KIND_UNSPECIFIED:
      return FieldKind::kAuto;
    case v1::FIELD_KIND_IMAGE:
      return FieldKind::kImage;
    case v1::FIELD_KIND_BYTES:
      return FieldKind::kBytes;
    case v1::FIELD_KIND_MASK:
      return FieldKind::kMask;
    default:
      return std::nullopt;
  }
}

v1::MissingField ToWire(MissingField value) {
  return value == MissingField::kSkip ? v1::MISSING_FIELD_SKIP
                                      : v1::MISSING_FIELD_ERROR;
}

std::optional<MissingField> FromWire(v1::MissingField value) {
  switch (value) {
    case v1::MISSING_FIELD_UNSPECIFIED:
    case v1::MISSING_FIELD_ERROR:
      return MissingField::kError;
    case v1::MISSING_FIELD_SKIP:
      return MissingField::kSkip;
    default:
      return std::nullopt;
  }
}

}  // namespace stoker
