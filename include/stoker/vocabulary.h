// The words the daemon and the SDK share for a job's settings, one type
// each (the wire's enums of the same names are in loader.proto). A public
// header of the SDK (installed beside client/include/stoker/, which
// types.h and ops.h include it from) that the daemon includes too
// (daemon/spec/job_config.h): it lives at the root's include/ so that
// neither reaches into the other's folder.
#ifndef STOKER_VOCABULARY_H_
#define STOKER_VOCABULARY_H_

namespace stoker {

// What the daemon does with a file it cannot read or decode.
enum class OnError {
  kReplace,  // substitute the next readable sample (deterministic)
  kFail,     // fail the job; Consumer::Next() returns DATA_LOSS naming the file
};

// The element type of a batch's images.
enum class DType {
  kUInt8,    // 0..255, smallest to ship; normalise on the GPU
  kFloat32,  // v / 255, then Normalize if the pipeline has it
  kFloat16,  // the same as IEEE half floats (uint16_t bit patterns)
};

enum class Layout { kNHWC, kNCHW };

// Resampling filters, as Pillow's Image.resize applies them (torchvision's
// bytes on PIL images).
enum class Interpolation { kBilinear, kNearest, kBicubic };

// How the consumers attached to one job share its batches.
enum class ConsumerMode {
  kExclusive,  // one consumer at a time (default)
  kBroadcast,  // every consumer receives every batch, decoded once
  kPartition,  // each batch goes to exactly one consumer
};

// Broadcast: what happens to a consumer more than max_lag batches behind the
// most advanced one.
enum class LagPolicy {
  kDetach,  // its Next() fails with RESOURCE_EXHAUSTED; the others go on
  kSkip,    // it jumps ahead; the batches in between are not delivered to it
};

// What a dataset is stored as (DatasetSpec in loader.proto).
enum class DatasetKind {
  kImageFolder,  // root/<class>/<image>
  kTarShards,    // WebDataset tar shards: key.jpg + key.cls
  kManifest,     // a CSV or JSON-lines file of (path, label) rows
};

// What the daemon does with a sample field's value (JobSpec::fields).
enum class FieldKind {
  kAuto,   // an image suffix, or a manifest's "path" column: kImage; else kBytes
  kImage,  // decoded and sent through the pipeline: a tensor like images
  kBytes,  // passed through unparsed: variable-length bytes per sample
  kMask,   // the image's label mask (a P or L PNG): its indices, taken
           // through the image's geometry, uint8 [n, H, W]
};

// What happens to a sample that lacks one of a job's fields.
enum class MissingField {
  kError,  // it fails when read, naming the field, through on_error
  kSkip,   // it is left out of the dataset (counts stay exact)
};

// A failed job stays until deleted, with its error; a deleted one is gone
// (its consumers are told why).
enum class JobState { kRunning, kFinished, kFailed };

}  // namespace stoker

#endif  // STOKER_VOCABULARY_H_
