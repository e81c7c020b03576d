/* The C ABI of libstoker: what bindings in other languages (the Python
 * package, through ctypes) call. Plain C types only, so that one build of
 * libstoker.so.1 serves every interpreter version.
 *
 * Conventions:
 *  - A function that can fail returns a status code (stoker_status below):
 *    STOKER_STATUS_OK, otherwise the gRPC/absl code under its name.
 *    stoker_last_error() then gives the daemon's or the SDK's sentence,
 *    valid on the calling thread until its next stoker_ call.
 *  - Every struct starts with `struct_size`, which the caller sets to
 *    sizeof the struct it was compiled with, so that a struct can grow at
 *    its end without breaking older callers: the library reads an options
 *    struct's fields only within struct_size (the rest take their defaults)
 *    and writes only the first struct_size bytes of an out struct. A size
 *    smaller than this ABI version's struct is INVALID_ARGUMENT.
 *  - Structured values (job specs in, jobs and stats out) are JSON: the
 *    protobuf JSON mapping of the stoker.v1 messages in
 *    proto/stoker/v1/loader.proto (JobSpec, Job, ListJobsResponse, Stats),
 *    with the proto field names. A field that does not exist is an error,
 *    not ignored. Strings returned through `char**` are freed with
 *    stoker_free().
 *  - Handles are freed by their own function; every function is
 *    thread-safe except stoker_next() and the copier's, which take one
 *    thread at a time per consumer; a consumer must not be closed while
 *    another thread is in one of its calls. No C++ exception crosses this
 *    interface (an unexpected one is INTERNAL).
 *  - Handles are checked: a handle closed already, or one of another kind,
 *    gets STOKER_STATUS_INVALID_ARGUMENT saying so, and closing or releasing
 * one twice does nothing the second time. (An address the allocator has given
 * to a new handle of the same kind is that handle.)
 *  - No function holds a lock of the caller's; blocking ones
 *    (stoker_connect, stoker_next, stoker_cuda_drain) only wait on sockets
 *    and condition variables.
 */
#ifndef STOKER_STOKER_C_H_
#define STOKER_STOKER_C_H_

#include <stddef.h>
#include <stdint.h>

#include "stoker/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct stoker_client stoker_client;
typedef struct stoker_consumer stoker_consumer;
typedef struct stoker_batch stoker_batch;
typedef struct stoker_cuda_copier stoker_cuda_copier;

/* Bumped when this header changes: 2, the struct_size fields (an
 * incompatible change, and the SONAME libstoker.so.1 with it); 3, named
 * fields (stoker_batch_info.field_count and stoker_batch_field, an addition
 * that callers of version 2 do not see). */
#define STOKER_C_ABI_VERSION 3

/* Status codes: the gRPC/absl codes, plus STOKER_STATUS_NEXT_TIMED_OUT.
 * Functions return them as int. */
typedef enum stoker_status {
  STOKER_STATUS_OK = 0,
  STOKER_STATUS_CANCELLED = 1,
  STOKER_STATUS_UNKNOWN = 2,
  STOKER_STATUS_INVALID_ARGUMENT = 3,
  STOKER_STATUS_DEADLINE_EXCEEDED = 4,
  STOKER_STATUS_NOT_FOUND = 5,
  STOKER_STATUS_ALREADY_EXISTS = 6,
  STOKER_STATUS_PERMISSION_DENIED = 7,
  STOKER_STATUS_RESOURCE_EXHAUSTED = 8,
  STOKER_STATUS_FAILED_PRECONDITION = 9,
  STOKER_STATUS_ABORTED = 10,
  STOKER_STATUS_OUT_OF_RANGE = 11,
  STOKER_STATUS_UNIMPLEMENTED = 12,
  STOKER_STATUS_INTERNAL = 13,
  STOKER_STATUS_UNAVAILABLE = 14,
  STOKER_STATUS_DATA_LOSS = 15,
  STOKER_STATUS_UNAUTHENTICATED = 16,
  /* stoker_next only: no batch came within its timeout (not a gRPC code:
   * a DEADLINE_EXCEEDED from stoker_next is the daemon ending the consumer
   * for holding a batch past its lease timeout, and final). */
  STOKER_STATUS_NEXT_TIMED_OUT = 100
} stoker_status;

/* The element type of a batch's images (stoker_batch_info), or of one of
 * its fields (stoker_field_info: INT64 for labels). */
typedef enum stoker_dtype {
  STOKER_DTYPE_UINT8 = 0,
  STOKER_DTYPE_FLOAT32 = 1,
  STOKER_DTYPE_FLOAT16 = 2,
  STOKER_DTYPE_INT64 = 3
} stoker_dtype;

typedef enum stoker_layout {
  STOKER_LAYOUT_NHWC = 0,
  STOKER_LAYOUT_NCHW = 1
} stoker_layout;

STOKER_API int stoker_abi_version(void);
STOKER_API const char* stoker_version(void);
STOKER_API const char* stoker_last_error(void);
STOKER_API void stoker_free(char* text);

/* Client: a connection to a daemon. `target` as for stoker::Client::Connect
 * (a path, unix:PATH or unix://PATH); NULL or "" for the system socket.
 * timeout_ms < 0: 5 s; INT64_MAX (or anything over a year): no deadline. */
STOKER_API int stoker_connect(const char* target, int64_t timeout_ms,
                              stoker_client** out);
STOKER_API void stoker_client_close(stoker_client* client);
/* Jobs as stoker.v1 JSON. create_job and get_job give every class name;
 * list_jobs gathers every page of jobs, each with the class names the daemon
 * sent (the first 256 KiB of them; numClasses counts all). */
STOKER_API int stoker_create_job(stoker_client* client, const char* spec_json,
                                 char** job_json);
/* A job over remote shards: remote_json is a stoker.v1.RemoteAccess (the
 * caller's own credentials; the daemon drops them once the job is made). */
STOKER_API int stoker_create_remote_job(stoker_client* client,
                                        const char* spec_json,
                                        const char* remote_json,
                                        char** job_json);
STOKER_API int stoker_get_job(stoker_client* client, const char* job_id,
                              char** job_json);
STOKER_API int stoker_list_jobs(stoker_client* client, char** jobs_json);
STOKER_API int stoker_delete_job(stoker_client* client, const char* job_id);
STOKER_API int stoker_get_stats(stoker_client* client, char** stats_json);

/* Consumer: an attachment to a job (see stoker::ConsumerOptions). */
typedef struct stoker_consumer_options {
  uint32_t struct_size;         /* sizeof(stoker_consumer_options) */
  uint32_t prefetch;            /* 0: the SDK's default */
  const char* name;             /* may be NULL */
  int64_t reconnect_timeout_ms; /* < 0: the SDK's default; 0: none */
  int copy_on_write;            /* nonzero: writable private views */
} stoker_consumer_options;

STOKER_API int stoker_attach(stoker_client* client, const char* job_id,
                             const stoker_consumer_options* options,
                             stoker_consumer** out);
/* Ends the stream; batches still held stay readable. */
STOKER_API void stoker_consumer_close(stoker_consumer* consumer);
STOKER_API int stoker_consumer_job(stoker_consumer* consumer, char** job_json);
STOKER_API int stoker_consumer_position(stoker_consumer* consumer,
                                        uint64_t* epoch, uint64_t* batch);

typedef struct stoker_input_stats {
  uint32_t struct_size; /* set by the caller: sizeof(stoker_input_stats) */
  uint64_t batches;
  double wait_seconds;
  double step_seconds;
  double input_bound_percent;
  double recent_input_bound_percent;
} stoker_input_stats;

STOKER_API int stoker_consumer_input_stats(stoker_consumer* consumer,
                                           stoker_input_stats* out);

/* One batch: where its tensors are and what they hold. */
typedef struct stoker_batch_info {
  uint32_t struct_size; /* set by the caller: sizeof(stoker_batch_info) */
  void* images;
  int32_t dtype;  /* a stoker_dtype */
  int32_t layout; /* a stoker_layout */
  int64_t shape[4];
  uint64_t image_bytes;
  const int64_t* labels;  /* [size]; NULL in a job of named fields */
  const int64_t* indices; /* [size] dataset index of each row */
  uint32_t size;
  uint32_t slot;
  uint64_t epoch;
  uint64_t index; /* batch index within the epoch */
  /* ABI 3: the batch's fields (stoker_batch_field): a classic job's images
   * and labels, or the fields its spec named. */
  uint32_t field_count;
} stoker_batch_info;

/* The name of STOKER_STATUS_NEXT_TIMED_OUT in ABI version 1. */
#define STOKER_NEXT_TIMED_OUT STOKER_STATUS_NEXT_TIMED_OUT

/* The next batch, waiting at most timeout_ms (< 0: no limit):
 * STOKER_STATUS_NEXT_TIMED_OUT when none came in time (call again; nothing is
 * lost), STOKER_STATUS_OUT_OF_RANGE after the job's last batch. `images` is
 * writable only for a copy_on_write consumer. A caller whose struct_size
 * ends before field_count (ABI 2) gets FAILED_PRECONDITION for a batch of
 * named fields (it has no labels), and the batch is released. */
STOKER_API int stoker_next(stoker_consumer* consumer, int64_t timeout_ms,
                           stoker_batch** out, stoker_batch_info* info);
/* Confirms the batch (Batch::CheckIntact): STOKER_STATUS_OK if it is this
 * consumer's for good; otherwise the daemon took it back, it must not be used,
 * and stoker_last_error() says why. */
STOKER_API int stoker_batch_check_intact(const stoker_batch* batch);
/* Gives the slot back and frees the handle; from any thread. */
STOKER_API void stoker_batch_release(stoker_batch* batch);

/* One field of a batch (see stoker::Batch::Field). Pointers stay valid
 * while the batch is held. */
typedef enum stoker_field_kind {
  STOKER_FIELD_IMAGE = 0, /* dtype, layout, shape and bytes at data */
  STOKER_FIELD_INT64 = 1, /* size int64 values at data (labels) */
  STOKER_FIELD_BYTES = 2, /* a value per sample: lengths[i] bytes at
                             data + i * row_stride (a caption, a JSON object,
                             an array: the member or column as it was) */
  STOKER_FIELD_MASK = 3   /* uint8 [size, H, W] at data: each sample's label
                             mask, taken through the image's geometry */
} stoker_field_kind;

typedef struct stoker_field_info {
  uint32_t struct_size; /* set by the caller: sizeof(stoker_field_info) */
  const char* name;
  int32_t kind;   /* a stoker_field_kind */
  int32_t dtype;  /* a stoker_dtype (UINT8 for bytes) */
  int32_t layout; /* images: a stoker_layout */
  int32_t rank;   /* of shape: 4 images, 1 int64, 2 bytes ([size, row]),
                     3 masks ([size, H, W]) */
  int64_t shape[4];
  const void* data;
  uint64_t bytes;         /* at data */
  const int64_t* lengths; /* bytes: [size] */
  uint64_t row_stride;    /* bytes */
} stoker_field_info;

/* Field `index` (< stoker_batch_info.field_count) of `batch`, in the job's
 * order; INVALID_ARGUMENT past the last one. */
STOKER_API int stoker_batch_field(const stoker_batch* batch, uint32_t index,
                                  stoker_field_info* out);

/* GPU copies (see stoker::CudaCopier). `stream` is a cudaStream_t (NULL:
 * the legacy default stream). stoker_cuda_copy_async takes over `batch`
 * (released once the copy has completed, whatever it returns). */
STOKER_API int stoker_cuda_available(void);
/* device: the CUDA device index (-1: the library's current device). */
STOKER_API int stoker_cuda_copier_create(stoker_consumer* consumer, int device,
                                         stoker_cuda_copier** out);
STOKER_API int stoker_cuda_copier_pinned(const stoker_cuda_copier* copier);
STOKER_API int stoker_cuda_copy_async(stoker_cuda_copier* copier,
                                      stoker_batch* batch, void* device_images,
                                      void* device_labels, void* stream);
STOKER_API int stoker_cuda_drain(stoker_cuda_copier* copier);
STOKER_API void stoker_cuda_copier_destroy(stoker_cuda_copier* copier);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STOKER_STOKER_C_H_ */
