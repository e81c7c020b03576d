// Consumer and Batch: receiving a job's batches.
//
// A Consumer is one attachment to a job (one Consume stream). Next() blocks
// until the next batch is ready and returns it as a Batch: a lease on one
// slot of the job's ring, which the SDK maps read-only once per job. The
// tensors of a Batch point straight into shared memory; nothing is copied.
// Destroying (or Release()-ing) the Batch gives the slot back to the daemon,
// which refills it.
//
//   auto consumer = client->Attach(job.id);
//   while (true) {
//     absl::StatusOr<stoker::Batch> batch = (*consumer)->Next();
//     if (absl::IsOutOfRange(batch.status())) break;  // end of job
//     if (!batch.ok()) return batch.status();
//     auto loss = Forward(batch->images(), batch->labels());
//     if (auto mine = batch->CheckIntact(); !mine.ok()) return mine;
//     Step(loss);  // commit only what a confirmed batch taught
//   }  // each Batch releases its slot when it goes out of scope
//
// Exactly once: the daemon takes a consumer's leases back when its stream
// ends (closed, process gone, no keepalive answer, --lease_timeout, lag,
// job ended) and may then give those batches to another consumer. Whose a
// batch is is decided in shared memory (common/lease_table.h), so:
// CheckIntact() confirms the batch, after which it is this consumer's for
// good, or says why it was taken back; Next() never returns a void batch
// and never a clean end after one. Confirm after reading a batch and
// before committing its effect (see docs/trainers.md, "Exactly once").
//
// Thread-safety: Next() from one thread at a time. Batches may be released
// from any thread, also after their Consumer is gone (then it is a no-op).
#ifndef STOKER_CONSUMER_H_
#define STOKER_CONSUMER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "stoker/types.h"

namespace stoker {

namespace v1 {
class BatchHandle;
}  // namespace v1
namespace internal {
class ConsumerCore;
class Reconnector;
}  // namespace internal

class STOKER_API Batch {
 public:
  Batch() = default;
  Batch(Batch&& other) noexcept;
  Batch& operator=(Batch&& other) noexcept;
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();  // Release()

  // False for a default-constructed, moved-from or released Batch.
  bool valid() const { return core_ != nullptr; }

  uint64_t epoch() const { return epoch_; }
  uint64_t index() const { return index_; }  // batch index within the epoch
  uint32_t size() const { return size_; }    // samples in this batch
  uint32_t slot() const { return slot_; }
  uint64_t generation() const { return generation_; }

  // The images in any dtype and layout: [size, H, W, 3] (NHWC) or
  // [size, 3, H, W] (NCHW), RGB.
  struct ImageTensor {
    const void* data = nullptr;
    DType dtype = DType::kUInt8;
    Layout layout = Layout::kNHWC;
    std::array<int64_t, 4> shape = {};
    size_t bytes = 0;
  };
  ImageTensor image_tensor() const;
  // Typed views; empty unless the job's dtype is the one asked for. In a
  // job of named fields, its image field.
  TensorView<uint8_t> images() const;
  TensorView<float> images_f32() const;
  TensorView<uint16_t> images_f16() const;  // IEEE half bit patterns
  // [size] class index of each row; empty in a job of named fields.
  std::span<const int64_t> labels() const {
    if (labels_ == nullptr) return {};
    return {labels_, size_};
  }
  // [size] dataset index of each row (see JobInfo::num_samples).
  std::span<const int64_t> indices() const { return {indices_, size_}; }

  // One field of the batch, in shared memory like the rest: a tensor of
  // images, an int64 per sample (a classic job's labels), or a bytes value
  // per sample (a caption, a JSON object, an array: what the shard member
  // or manifest column held, unparsed).
  struct Field {
    enum class Kind { kImage, kInt64, kBytes, kMask };
    std::string name;
    Kind kind = Kind::kBytes;
    ImageTensor image;                // kImage
    std::span<const int64_t> int64s;  // kInt64: [size]
    // kMask (FieldKind::kMask): uint8 [size, H, W], each sample's label
    // mask at the image's output size, row-major.
    const uint8_t* mask = nullptr;
    std::array<int64_t, 3> mask_shape = {};
    // kBytes: sample i's value is lengths[i] bytes at rows + i * row_stride
    // (value(i); never past its row, even in a slot reclaimed under it;
    // empty for another kind or a row past the batch).
    const uint8_t* rows = nullptr;
    uint64_t row_stride = 0;
    std::span<const int64_t> lengths;
    std::string_view value(size_t i) const {
      if (kind != Kind::kBytes || i >= lengths.size()) return {};
      const uint64_t length = static_cast<uint64_t>(lengths[i]);
      return {reinterpret_cast<const char*>(rows + i * row_stride),
              static_cast<size_t>(length < row_stride ? length : row_stride)};
    }
  };
  // Every field, in the job's order: a classic job's "images" and "labels",
  // or the fields its spec named (JobSpec::fields).
  const std::vector<Field>& fields() const { return fields_; }
  // The field named `name`; nullptr if the job has none of that name.
  const Field* field(std::string_view name) const;

  // Confirms the batch: OK means it is this consumer's for good (the daemon
  // never gives it to another consumer, even if this process stops now)
  // and its slot still holds it. Otherwise the daemon already took the
  // lease back and the batch must not be used: the status is the daemon's
  // reason (UNAVAILABLE keepalive, DEADLINE_EXCEEDED lease timeout,
  // RESOURCE_EXHAUSTED lag, CANCELLED stream closed...), or DATA_LOSS for
  // a batch confirmed earlier whose slot was refilled since. Idempotent.
  absl::Status CheckIntact() const;

  // Gives the slot back to the daemon. Idempotent.
  void Release();

 private:
  friend class Consumer;
  friend class CudaCopier;

  std::shared_ptr<internal::ConsumerCore> core_;
  uint32_t slot_ = 0;
  uint64_t generation_ = 0;
  uint64_t epoch_ = 0;
  uint64_t index_ = 0;
  uint32_t size_ = 0;
  ImageTensor image_;
  const int64_t* labels_ = nullptr;
  const int64_t* indices_ = nullptr;
  std::vector<Field> fields_;
};

struct ConsumerOptions {
  // Handles the daemon may send ahead of Next() calls (credit); at least 1.
  uint32_t prefetch = 2;
  // A label for humans (daemon stats and logs), at most 128 bytes.
  std::string name;
  // When the stream breaks with UNAVAILABLE (the daemon restarted, or the
  // connection dropped), Next() reconnects for up to this long, with
  // backoff from 50 ms to 2 s, and resumes at the first batch this consumer
  // has not confirmed or released: it attaches to the job again or, if the
  // daemon lost it (restart), creates it again from the same spec at that
  // position (exclusive jobs only). Batches already confirmed or released are
  // never handed out again; one not confirmed is void in this process (it comes
  // again), and while the trainer holds one, Next() first returns the
  // UNAVAILABLE instead of reconnecting. Zero: no reconnecting, Next()
  // returns the UNAVAILABLE.
  std::chrono::milliseconds reconnect_timeout = std::chrono::seconds(60);
  // Batches' tensors point into a private copy-on-write mapping of the ring
  // instead of the read-only one: writing into them (an in-place op) copies
  // the touched pages for this process only; the ring and every other
  // consumer are untouched. The copies are dropped when the batch is
  // released. Costs page faults on the next read of each released slot;
  // not for CudaCopier. For bindings whose tensors cannot be read-only.
  bool copy_on_write = false;
};

// Where a trainer's time goes, measured by the SDK around Next(): `wait` is
// time spent inside Next() for a batch, `step` the time between one Next()
// returning and the next call (the trainer's own work). Input-bound % =
// wait / (wait + step): near 0 the trainer never waits for data; above ~10-20
// the input pipeline is what limits the GPU. The SDK also reports these to
// the daemon about once a second (GetStats, per consumer).
struct InputStats {
  uint64_t batches = 0;
  double wait_seconds = 0;
  double step_seconds = 0;
  double input_bound_percent = 0;
  // The same over about the last 10 seconds.
  double recent_input_bound_percent = 0;
};

class STOKER_API Consumer {
 public:
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;
  // Half-closes the stream and waits for the daemon to end it. Batches still
  // held stay mapped; their releases are dropped. Those confirmed count as
  // consumed; the daemon hands the others to the next consumer of the job,
  // and they are void here (CheckIntact() says CANCELLED).
  ~Consumer();

  // The next batch, in order. OUT_OF_RANGE after the last batch of the last
  // epoch; otherwise the stream's error: UNAVAILABLE (daemon stopping or
  // gone; keepalive), CANCELLED (job deleted), DATA_LOSS (on_error=FAIL and
  // a file could not be decoded; the message names it), ABORTED (ring
  // deleted), DEADLINE_EXCEEDED (lease timeout), RESOURCE_EXHAUSTED (lag).
  // A batch this consumer released unconfirmed after its lease was taken
  // back makes the next call return that reason, once.
  absl::StatusOr<Batch> Next();
  // The same, waiting at most `timeout`: if no batch came, DEADLINE_EXCEEDED
  // for which IsNextTimeout() is true (nothing is lost; call again). Any
  // other error is the stream's, as for Next() (the daemon's lease timeout
  // is a DEADLINE_EXCEEDED too, and final). For callers that must stay
  // responsive, such as an interpreter checking for Ctrl-C.
  absl::StatusOr<Batch> Next(std::chrono::milliseconds timeout);

  // The job being consumed (after a reconnect that re-created it, the new
  // job: same spec, new id).
  JobInfo job() const;

  // Where to resume: the first batch, in delivery order, neither confirmed
  // nor released.
  // Save it with the model checkpoint (SerializePosition) and pass it as
  // JobSpec::start to a new job with the same spec, after a trainer or a
  // daemon restart: it serves exactly the batches not yet consumed.
  Position position() const;

  // How much of the trainer's time went to waiting for input (see
  // InputStats).
  InputStats input_stats() const;

 private:
  friend class Client;
  friend class CudaCopier;
  STOKER_LOCAL Consumer(std::shared_ptr<internal::ConsumerCore> core,
                        std::unique_ptr<internal::Reconnector> reconnector);
  std::shared_ptr<internal::ConsumerCore> core() const;
  // The batch `handle` names in `core`'s ring, checked against the spec.
  STOKER_LOCAL static absl::StatusOr<Batch> BatchOf(
      const std::shared_ptr<internal::ConsumerCore>& core,
      const v1::BatchHandle& handle);

  // The current stream; replaced by Next() when it reconnects.
  mutable std::mutex mu_;
  std::shared_ptr<internal::ConsumerCore> core_;
  const std::unique_ptr<internal::Reconnector> reconnector_;
};

// True for the status of a Consumer::Next(timeout) that ran out of time.
STOKER_API bool IsNextTimeout(const absl::Status& status);

// "stoker-position:<epoch>:<batch>", and back (INVALID_ARGUMENT if malformed).
STOKER_API std::string SerializePosition(const Position& position);
STOKER_API absl::StatusOr<Position> ParsePosition(std::string_view text);

}  // namespace stoker

#endif  // STOKER_CONSUMER_H_
