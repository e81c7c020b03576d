// A job as the daemon runs it: the validated form of a JobSpec (see
// job_spec.h for the validation), in plain types without protobuf or gRPC.
#ifndef STOKER_DAEMON_SPEC_JOB_CONFIG_H_
#define STOKER_DAEMON_SPEC_JOB_CONFIG_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/ring_layout.h"
#include "daemon/image/pipeline.h"
#include "daemon/os/file_identity.h"
#include "daemon/os/process_identity.h"
#include "stoker/vocabulary.h"  // OnError, ConsumerMode, DatasetKind, ...

namespace stoker {

// The most consumers attached to one job at once.
inline constexpr uint32_t kMaxConsumersPerJob = 64;

// This rank's share of the dataset, as DistributedSampler takes it (see
// Shard in jobs/epoch_order.h).
struct Sharding {
  uint32_t rank = 0;
  uint32_t world_size = 1;
  bool drop_tail = false;
  // Repeated augmentation: copies of each sample in the order (1: off).
  uint32_t repetitions = 1;
};

// How a job's batches are shared among its consumers (see SharingSpec in
// loader.proto). Validated: max_lag is in [1, slots - 1] for broadcast.
struct SharingConfig {
  ConsumerMode mode = ConsumerMode::kExclusive;
  uint32_t max_lag = 0;
  LagPolicy on_lag = LagPolicy::kDetach;
  uint32_t min_consumers = 1;
};

// How a job's slots hold one field of its samples.
enum class FieldRole {
  kImage,  // decoded and sent through the pipeline
  kLabel,  // a classic job's int64 label, from the dataset index
  kBytes,  // the value passed through: variable length, at most row_bytes
  kMask,   // the image's label mask: uint8 [H, W] at the output's size
};

struct FieldConfig {
  std::string name;
  // Shards: member suffixes, the first a sample has taken; manifests: one
  // column. Empty for a classic job's fields.
  std::vector<std::string> source;
  FieldRole role = FieldRole::kBytes;
  // kBytes: what a slot holds per sample: set when the job is created (the
  // dataset's largest value, within max_field_bytes); 0 before.
  uint64_t row_bytes = 0;
};

// A classic job's fields: "images" and "labels".
std::vector<FieldConfig> ClassicFields();

struct JobConfig {
  std::string name;
  // The dataset: an ImageFolder root or a manifest file (dataset_path), or
  // tar shards (brace patterns, expanded when the job is created).
  DatasetKind dataset_kind = DatasetKind::kImageFolder;
  std::string dataset_path;
  std::vector<std::string> shards;
  std::string label_field;  // shards: the json field; empty: cls
  // Remote shards: DatasetSpec.streaming (nullopt: when they do not fit)
  // and shuffle_window (shards; 0 before the default applies).
  std::optional<bool> streaming;
  uint32_t shuffle_window = 0;
  // What each sample carries, in the order of a batch's tensors: a classic
  // job's images and labels, or the fields the spec named (named_fields).
  std::vector<FieldConfig> fields = ClassicFields();
  bool named_fields = false;
  MissingField missing = MissingField::kError;
  // kBytes fields: the most one value may hold; 0 until the registry
  // applies the daemon's max_field_bytes (JobRegistry::Create).
  uint32_t max_field_bytes = 0;
  uint32_t batch_size = 0;
  uint32_t slots = 0;
  Pipeline pipeline;  // what each image becomes, and in which dtype/layout
  // JobSpec.views: each image decoded once and made into each of these
  // (pipeline is then views[0]); empty: the one pipeline.
  std::vector<Pipeline> views;
  // A kMask field's index where padding or a warp uncovers the mask.
  uint8_t mask_fill = 255;
  // JobSpec.mask_tensor_nearest: transforms.v2's resize of a mask tensor.
  bool mask_tensor_nearest = false;
  uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
  uint32_t epochs = 1;  // 0: until deleted
  OnError on_error = OnError::kReplace;
  Sharding sharding;
  uint64_t start_epoch = 0;  // resume position
  uint64_t start_batch = 0;
  SharingConfig sharing;
  uint32_t weight = 1;                       // share of the worker pool
  std::string owner;                         // the client that created the job
  uid_t owner_uid = static_cast<uid_t>(-1);  // its user, from the socket
  // The owner's uid, gid and groups, as the kernel reported them for its
  // socket: dataset files are opened with its permissions (ActAs).
  FileIdentity owner_files;
  // The process that asked for the job: once it is gone and no consumer is
  // attached, the job is an orphan, and gives way to a new job at a limit.
  ProcessIdentity owner_process;
  std::string access_group;  // as asked for; resolved to access_gid
  std::optional<gid_t> access_gid;
};

// Who may see a job: its owner, root, the daemon's own user, and members of
// the job's access group (checked by MayAccess in api/peer.h).
struct JobAccess {
  uid_t owner_uid = static_cast<uid_t>(-1);
  std::optional<gid_t> group;
};

// The pipelines of the image field: its views, or the one pipeline.
inline std::span<const Pipeline> ImagePipelines(const JobConfig& config) {
  if (config.views.empty()) return {&config.pipeline, 1};
  return config.views;
}

// The slot tensor that holds field `f` (an image field holds one tensor per
// view, the first here).
size_t FirstTensor(const JobConfig& config, size_t f);

// The ring a job of this config reserves: one tensor per field (an image
// field's size is the pipeline's output; one per view with views), then
// the indices.
RingGeometry RingGeometryFor(const JobConfig& config);
SlotLayout SlotLayoutFor(const JobConfig& config);

}  // namespace stoker

#endif  // STOKER_DAEMON_SPEC_JOB_CONFIG_H_
