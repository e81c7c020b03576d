// Plain value types of the stoker client API.
#ifndef STOKER_TYPES_H_
#define STOKER_TYPES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "stoker/export.h"
#include "stoker/ops.h"
#include "stoker/vocabulary.h"

namespace stoker {

inline constexpr char kDefaultTarget[] = "unix:///run/stoker/stoker.sock";

// RandomResizedCrop(size) + RandomHorizontalFlip(): the usual training
// pipeline (add Normalize() for float output).
STOKER_API std::vector<Op> TrainPipeline(uint32_t size = 224);
// Resize(shorter side) + CenterCrop(crop): the usual evaluation pipeline.
STOKER_API std::vector<Op> EvalPipeline(uint32_t resize = 256,
                                        uint32_t crop = 224);

// A place in a job's stream of batches: batch `batch` of epoch `epoch`.
struct Position {
  uint64_t epoch = 0;
  uint64_t batch = 0;
  bool operator==(const Position&) const = default;
};

struct Sharing {
  ConsumerMode mode = ConsumerMode::kExclusive;
  // Broadcast: batches a consumer may be behind the leader (received by the
  // leader, not by it); 1..slots-1, 0: slots - 1.
  uint32_t max_lag = 0;
  LagPolicy on_lag = LagPolicy::kDetach;
  // Broadcast: no batch is delivered before this many consumers attached
  // (trainers started a little apart all begin at the first batch).
  uint32_t min_consumers = 1;
};

// One named field of every sample (JobSpec::fields): where its value comes
// from and what the daemon does with it. See SampleFieldOf for webdataset's
// "jpg;png" form.
struct SampleField {
  std::string name;  // its name in a Batch (Batch::field)
  // Tar shards: member suffixes ("jpg", "seg.png"), the first one a sample
  // has taken; manifests: one column (CSV) or key (JSON lines).
  std::vector<std::string> source;
  // kAuto: an image suffix or a manifest's "path" column is an image
  // (decoded through the pipeline), anything else bytes (passed through).
  FieldKind kind = FieldKind::kAuto;
};

// The field webdataset's to_tuple("jpg;png") names: `spec` split at ';',
// named `spec`.
STOKER_API SampleField SampleFieldOf(std::string_view spec);

// What a trainer asks for. Defaults give a 224x224 ImageNet-style stream.
// One view of each sample's image (JobSpec::views): its own pipeline (a
// crop or resize first, which sets its size) and output.
struct ImageView {
  std::vector<Op> pipeline;
  uint32_t height = 0;  // 0: the pipeline's size
  uint32_t width = 0;
  DType dtype = DType::kUInt8;
  std::optional<Layout> layout;   // default NHWC for uint8, NCHW for floats
  bool scale_reciprocal = false;  // as JobSpec::scale_reciprocal
};

struct JobSpec {
  // The dataset, one of three (the others empty):
  std::string dataset_path;  // ImageFolder root: <root>/<class>/<file>.jpg
  // WebDataset tar shards, brace patterns allowed:
  // {"/data/train-{000000..001023}.tar"}. The label is each sample's cls
  // member, or the field `label_field` of its json member.
  std::vector<std::string> shards;
  std::string label_field;
  // Remote shards: streamed (true), fetched whole (false), or streamed when
  // they do not fit the node's shard cache (nullopt); a streamed job
  // shuffles within windows of shuffle_window shards (0: 16). See
  // docs/remote.md.
  std::optional<bool> streaming;
  uint32_t shuffle_window = 0;
  // A .csv (header: path,label[,class]) or .jsonl manifest of rows.
  std::string manifest;
  uint32_t batch_size = 64;  // 1..4096
  uint32_t slots = 8;        // ring depth, 1..256
  // The ops (stoker/ops.h) in the order docs/transforms.md gives: the
  // geometry (RandomResizedCrop; Resize [CenterCrop]; or [Resize] [Pad]
  // RandomCrop), then any of the flips, one warp, ColorJitter,
  // RandomGrayscale, GaussianBlur, one automatic augmentation, Normalize,
  // RandomErasing. Each sample's random parameters depend only on (seed,
  // epoch, sample index).
  std::vector<Op> pipeline;
  uint32_t height = 224;  // with an empty pipeline: resize to height x width
  uint32_t width = 224;
  DType dtype = DType::kUInt8;
  std::optional<Layout> layout;  // default NHWC for uint8, NCHW for floats
  // Float output: x * float32(1/255), as transforms.v2's ToDtype(scale=True),
  // instead of x / 255, as v1's ToTensor (they differ in the last bit).
  bool scale_reciprocal = false;
  // Several views of each image (self-supervised multi-crop, 1 to 32):
  // each image decoded once, then each view made by its own pipeline with
  // its own random draws. They replace pipeline, height, width, dtype,
  // layout and scale_reciprocal; a batch's image field becomes one tensor
  // per view, "<field>.0", "<field>.1", ... ("images.0" in a classic job).
  std::vector<ImageView> views;
  // The Pillow and numpy versions ("MAJOR.MINOR") whose output to match in
  // the few corners where it depends on them (proto: ReferenceVersions);
  // empty: the newest behaviour.
  std::string reference_pillow;
  std::string reference_numpy;
  uint64_t seed = 0;  // same seed, same order
  bool shuffle = true;
  bool drop_last = false;
  uint32_t epochs = 1;  // 0: until the job is deleted
  OnError on_error = OnError::kReplace;
  std::string name;  // a label for humans
  // Data-parallel sharding, exactly torch's DistributedSampler: this job
  // serves rank `rank` of `world_size` ranks (same seed on every rank);
  // shard_drop_last is DistributedSampler's drop_last.
  uint32_t rank = 0;
  uint32_t world_size = 1;
  bool shard_drop_last = false;
  // Resume: serve from this position on (see Consumer::position()), with
  // the same bytes an uninterrupted job would have served there.
  Position start;
  Sharing sharing;
  // Share of the daemon's workers relative to other jobs with work, 1..100.
  uint32_t weight = 1;
  // Who besides its creator may use the job (attach, see, delete): members
  // of this group on the daemon's node (name or number). Empty: only the
  // creating user (and root, and the daemon's own user).
  std::string access_group;
  // Resample approximately (DCT-scaled decode, area average) instead of
  // exactly as Pillow: less CPU, pixels differ from torchvision's.
  bool fast_resample = false;
  // Repeated augmentation (the classification recipe's RASampler): each
  // sample k times per epoch, each copy its own augmentation; 0 or 1: off.
  uint32_t repeated_augmentations = 0;
  // Named fields instead of (images, labels), shards and manifests only:
  // each batch holds one field per entry, in this order (Batch::fields),
  // exactly one of them an image; e.g. {SampleFieldOf("jpg;png"),
  // SampleFieldOf("txt"), SampleFieldOf("json")} for img2dataset shards.
  std::vector<SampleField> fields;
  // A sample without one of the fields fails when read (through on_error),
  // or is left out of the dataset (kSkip).
  MissingField missing = MissingField::kError;
  // Bytes fields: the most one value may hold (0: the daemon's bound,
  // 64 KiB unless its max_field_bytes setting says otherwise).
  uint32_t max_field_bytes = 0;
  // A FieldKind::kMask field's index where padding or a warp uncovers the
  // mask (the segmentation reference's ignore index by default).
  uint8_t mask_fill = 255;
  // The mask resized as transforms.v2 resizes a tv_tensors.Mask (torch's
  // nearest), not as Pillow resizes a PIL mask.
  bool mask_tensor_nearest = false;
};

struct JobInfo {
  std::string id;
  JobSpec spec;  // as the daemon applies it
  JobState state = JobState::kRunning;
  std::string error;  // why the job failed
  uint64_t num_samples = 0;
  std::vector<std::string> class_names;  // label i is class_names[i]
  uint64_t batches_per_epoch = 0;
  std::string segment_name;
  uint64_t segment_bytes = 0;
  uint32_t owner_uid = 0;  // the user that created it
  DatasetKind dataset_kind = DatasetKind::kImageFolder;
  uint64_t num_shards = 0;   // tar shards, after brace expansion
  uint64_t index_bytes = 0;  // the dataset index, shared by its jobs
  // Samples left out because they lacked a field (MissingField::kSkip).
  uint64_t samples_skipped = 0;
};

struct SampleError {
  std::string path;
  std::string reason;
};

// One consumer of a job, as the daemon sees it.
struct ConsumerStats {
  uint64_t id = 0;
  std::string name;    // ConsumerOptions::name
  std::string client;  // the process it belongs to
  uint64_t batches_delivered = 0;
  uint64_t batches_released = 0;
  uint64_t batches_skipped = 0;  // broadcast with LagPolicy::kSkip
  uint32_t leased = 0;
  uint64_t lag = 0;  // broadcast: batches behind the leader
  // Share of the trainer's time spent waiting in Next(), from its SDK's
  // reports; -1 until the first report (about a second after attaching).
  double input_bound_percent = -1;
  double recent_input_bound_percent = -1;  // about the last 10 seconds
};

struct JobStats {
  std::string job_id;
  std::string name;
  std::string owner;  // the client that created it
  uint32_t owner_uid = 0;
  JobState state = JobState::kRunning;
  ConsumerMode mode = ConsumerMode::kExclusive;
  uint32_t weight = 1;
  uint64_t samples_decoded = 0;
  uint64_t batches_delivered = 0;  // to all consumers
  uint64_t batches_released = 0;
  uint64_t decode_errors = 0;
  std::vector<SampleError> errors;  // first distinct failing files
  uint32_t slots = 0;
  uint32_t filling_slots = 0;
  uint32_t ready_slots = 0;
  uint32_t leased_slots = 0;
  double ring_occupancy_percent = 0;  // (filling + ready + leased) / slots
  // Over the last few seconds.
  double decoded_per_second = 0;
  double delivered_per_second = 0;
  uint64_t worker_busy_us = 0;  // worker time spent on the job so far
  uint32_t consumers = 0;
  std::vector<ConsumerStats> consumer;
};

struct DaemonStats {
  std::string version;
  uint32_t workers = 0;
  uint64_t uptime_ms = 0;
  uint64_t shm_bytes = 0;         // reserved by live rings
  uint64_t shm_budget_bytes = 0;  // 0: none beyond /dev/shm's free space
  uint64_t shm_free_bytes = 0;    // free in /dev/shm
  uint64_t samples_decoded = 0;
  uint64_t decode_errors = 0;
  // Over the last few seconds: share of worker time spent decoding, and
  // images decoded per second.
  double worker_busy_percent = 0;
  double decoded_per_second = 0;
  // Orphaned jobs (creator gone, no consumer) ended early to make room for
  // a new job at a limit.
  uint64_t orphans_reclaimed = 0;
  std::vector<JobStats> jobs;
};

// A read-only view of one tensor of a batch, in the job's shared memory.
template <typename T>
class TensorView {
 public:
  TensorView() = default;
  TensorView(const T* data, std::array<int64_t, 4> shape, int rank)
      : data_(data), shape_(shape), rank_(rank) {}

  const T* data() const { return data_; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return shape_[i]; }
  size_t size() const {
    size_t n = rank_ > 0 ? 1 : 0;
    for (int i = 0; i < rank_; ++i) n *= static_cast<size_t>(shape_[i]);
    return n;
  }
  size_t bytes() const { return size() * sizeof(T); }
  std::span<const T> span() const { return {data_, size()}; }

 private:
  const T* data_ = nullptr;
  std::array<int64_t, 4> shape_ = {};
  int rank_ = 0;
};

}  // namespace stoker

#endif  // STOKER_TYPES_H_
