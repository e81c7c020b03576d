// The C ABI (stoker/stoker_c.h) over the C++ SDK.
#include "stoker/stoker_c.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/src/c_handle_types.h"
#include "client/src/c_results.h"
#include "client/src/client_impl.h"
#include "client/src/convert.h"
#include "common/version.h"
#include "common/vocabulary_wire.h"
#include "stoker/client.h"
#include "stoker/consumer.h"
#include "stoker/cuda.h"

namespace {

using stoker::internal::Check;
using stoker::internal::CheckStructSize;
using stoker::internal::Close;
using stoker::internal::Fail;
using stoker::internal::Guard;
using stoker::internal::HandleKind;
using stoker::internal::Live;
using stoker::internal::NullArgument;
using stoker::internal::Track;
using stoker::internal::WriteJson;
using stoker::internal::WriteOut;
using stoker::internal::WriteResult;

// The SDK's connect timeout for timeout_ms: < 0 the default 5 s (the SDK
// takes any larger value, INT64_MAX included, as no deadline).
std::chrono::milliseconds ConnectTimeout(int64_t timeout_ms) {
  return std::chrono::milliseconds(timeout_ms < 0 ? 5000 : timeout_ms);
}

// The smallest struct_size each struct accepts: its size in C ABI version 2,
// the first with the field, up to the end of that version's last member
// (fields added later lie past it and keep these numbers).
constexpr size_t kConsumerOptionsV2 =
    offsetof(stoker_consumer_options, copy_on_write) + sizeof(int);
constexpr size_t kInputStatsV2 =
    offsetof(stoker_input_stats, recent_input_bound_percent) + sizeof(double);

}  // namespace

extern "C" {

int stoker_abi_version(void) { return STOKER_C_ABI_VERSION; }
const char* stoker_version(void) { return stoker::kVersion; }
const char* stoker_last_error(void) {
  return stoker::internal::LastError().c_str();
}
void stoker_free(char* text) { std::free(text); }

int stoker_connect(const char* target, int64_t timeout_ms,
                   stoker_client** out) {
  return Guard([&]() -> int {
    if (out == nullptr) return NullArgument("out");
    if (int bad = Check(stoker::internal::CheckMayConnect())) return bad;
    stoker::internal::NoteConnect();  // gRPC starts here, even on failure
    const std::string where =
        target == nullptr || *target == '\0' ? stoker::kDefaultTarget : target;
    auto client = stoker::Client::Connect(where, ConnectTimeout(timeout_ms));
    if (!client.ok()) return Fail(client.status());
    *out = Track(new stoker_client{*std::move(client)}, HandleKind::kClient);
    return STOKER_STATUS_OK;
  });
}

void stoker_client_close(stoker_client* client) {
  Close(client, HandleKind::kClient);
}

int stoker_create_job(stoker_client* client, const char* spec_json,
                      char** job_json) {
  return stoker_create_remote_job(client, spec_json, nullptr, job_json);
}

int stoker_create_remote_job(stoker_client* client, const char* spec_json,
                             const char* remote_json, char** job_json) {
  return Guard([&]() -> int {
    if (int bad = Live(client, HandleKind::kClient, "client")) return bad;
    if (spec_json == nullptr || job_json == nullptr) {
      return NullArgument("spec_json or job_json");
    }
    stoker::v1::JobSpec spec;
    stoker::v1::RemoteAccess remote;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    const auto parsed =
        google::protobuf::util::JsonStringToMessage(spec_json, &spec, options);
    if (!parsed.ok()) {
      return Fail(absl::InvalidArgumentError(
          absl::StrCat("job spec JSON: ", std::string(parsed.message()))));
    }
    // Its parser's message could quote the credentials: name the fault only.
    if (remote_json != nullptr && !google::protobuf::util::JsonStringToMessage(
                                       remote_json, &remote, options)
                                       .ok()) {
      return Fail(absl::InvalidArgumentError(
          "remote access JSON does not parse as a stoker.v1.RemoteAccess"));
    }
    return WriteResult(
        client->client->impl().CreateJob(std::move(spec), std::move(remote)),
        job_json);
  });
}

int stoker_get_job(stoker_client* client, const char* job_id, char** job_json) {
  return Guard([&]() -> int {
    if (int bad = Live(client, HandleKind::kClient, "client")) return bad;
    if (job_id == nullptr || job_json == nullptr) {
      return NullArgument("job_id or job_json");
    }
    return WriteResult(client->client->impl().GetJob(job_id), job_json);
  });
}

int stoker_list_jobs(stoker_client* client, char** jobs_json) {
  return Guard([&]() -> int {
    if (int bad = Live(client, HandleKind::kClient, "client")) return bad;
    if (jobs_json == nullptr) return NullArgument("jobs_json");
    return WriteResult(client->client->impl().ListJobs(), jobs_json);
  });
}

int stoker_delete_job(stoker_client* client, const char* job_id) {
  return Guard([&]() -> int {
    if (int bad = Live(client, HandleKind::kClient, "client")) return bad;
    if (job_id == nullptr) return NullArgument("job_id");
    return Check(client->client->impl().DeleteJob(job_id));
  });
}

int stoker_get_stats(stoker_client* client, char** stats_json) {
  return Guard([&]() -> int {
    if (int bad = Live(client, HandleKind::kClient, "client")) return bad;
    if (stats_json == nullptr) return NullArgument("stats_json");
    return WriteResult(client->client->impl().GetStats(), stats_json);
  });
}

int stoker_attach(stoker_client* client, const char* job_id,
                  const stoker_consumer_options* options,
                  stoker_consumer** out) {
  return Guard([&]() -> int {
    if (int bad = Live(client, HandleKind::kClient, "client")) return bad;
    if (job_id == nullptr || out == nullptr) {
      return NullArgument("job_id or out");
    }
    stoker::ConsumerOptions consumer_options;
    if (options != nullptr) {
      if (int bad = CheckStructSize(options->struct_size, kConsumerOptionsV2,
                                    "stoker_consumer_options")) {
        return bad;
      }
      if (options->prefetch > 0) consumer_options.prefetch = options->prefetch;
      if (options->name != nullptr) consumer_options.name = options->name;
      if (options->reconnect_timeout_ms >= 0) {
        consumer_options.reconnect_timeout =
            std::chrono::milliseconds(options->reconnect_timeout_ms);
      }
      consumer_options.copy_on_write = options->copy_on_write != 0;
    }
    auto consumer = client->client->Attach(job_id, consumer_options);
    if (!consumer.ok()) return Fail(consumer.status());
    *out =
        Track(new stoker_consumer{*std::move(consumer)}, HandleKind::kConsumer);
    return STOKER_STATUS_OK;
  });
}

void stoker_consumer_close(stoker_consumer* consumer) {
  Close(consumer, HandleKind::kConsumer);
}

int stoker_consumer_job(stoker_consumer* consumer, char** job_json) {
  return Guard([&]() -> int {
    if (int bad = Live(consumer, HandleKind::kConsumer, "consumer")) {
      return bad;
    }
    if (job_json == nullptr) return NullArgument("job_json");
    // The consumer's job as the daemon sees it now (after a reconnect that
    // re-created it, the new one).
    const stoker::JobInfo job = consumer->consumer->job();
    stoker::v1::Job message;
    message.set_id(job.id);
    *message.mutable_spec() = stoker::internal::ToProto(job.spec);
    message.set_num_samples(job.num_samples);
    message.set_batches_per_epoch(job.batches_per_epoch);
    for (const std::string& name : job.class_names)
      message.add_class_names(name);
    message.set_num_classes(job.class_names.size());
    message.set_owner_uid(job.owner_uid);
    message.set_dataset_kind(stoker::ToWire(job.dataset_kind));
    message.set_num_shards(job.num_shards);
    message.set_index_bytes(job.index_bytes);
    return WriteJson(message, job_json);
  });
}

int stoker_consumer_position(stoker_consumer* consumer, uint64_t* epoch,
                             uint64_t* batch) {
  if (int bad = Live(consumer, HandleKind::kConsumer, "consumer")) {
    return bad;
  }
  if (epoch == nullptr || batch == nullptr) {
    return NullArgument("epoch or batch");
  }
  const stoker::Position position = consumer->consumer->position();
  *epoch = position.epoch;
  *batch = position.batch;
  return STOKER_STATUS_OK;
}

int stoker_consumer_input_stats(stoker_consumer* consumer,
                                stoker_input_stats* out) {
  return Guard([&]() -> int {
    if (int bad = Live(consumer, HandleKind::kConsumer, "consumer")) {
      return bad;
    }
    if (out == nullptr) return NullArgument("out");
    if (int bad = CheckStructSize(out->struct_size, kInputStatsV2,
                                  "stoker_input_stats")) {
      return bad;
    }
    const stoker::InputStats stats = consumer->consumer->input_stats();
    WriteOut(out,
             stoker_input_stats{0, stats.batches, stats.wait_seconds,
                                stats.step_seconds, stats.input_bound_percent,
                                stats.recent_input_bound_percent});
    return STOKER_STATUS_OK;
  });
}

int stoker_cuda_available(void) {
  return stoker::CudaCopier::Available() ? 1 : 0;
}

int stoker_cuda_copier_create(stoker_consumer* consumer, int device,
                              stoker_cuda_copier** out) {
  return Guard([&]() -> int {
    if (int bad = Live(consumer, HandleKind::kConsumer, "consumer")) {
      return bad;
    }
    if (out == nullptr) return NullArgument("out");
    auto copier = stoker::CudaCopier::Create(*consumer->consumer, device);
    if (!copier.ok()) return Fail(copier.status());
    *out =
        Track(new stoker_cuda_copier{*std::move(copier)}, HandleKind::kCopier);
    return STOKER_STATUS_OK;
  });
}

int stoker_cuda_copier_pinned(const stoker_cuda_copier* copier) {
  return stoker::internal::LiveHandle(copier, HandleKind::kCopier) &&
                 copier->copier->pinned()
             ? 1
             : 0;
}

int stoker_cuda_copy_async(stoker_cuda_copier* copier, stoker_batch* batch,
                           void* device_images, void* device_labels,
                           void* stream) {
  return Guard([&]() -> int {
    // The batch is the call's from here, whatever happens (released at once
    // when no copy is made: a NULL or closed copier, no device_images).
    if (int bad = Live(batch, HandleKind::kBatch, "batch")) return bad;
    stoker::internal::RemoveHandle(batch, HandleKind::kBatch);
    std::unique_ptr<stoker_batch> owned(batch);
    if (int bad = Live(copier, HandleKind::kCopier, "copier")) {
      return bad;
    }
    if (device_images == nullptr) return NullArgument("device_images");
    return Check(copier->copier->CopyAsync(std::move(owned->batch),
                                           device_images, device_labels,
                                           static_cast<CUstream_st*>(stream)));
  });
}

int stoker_cuda_drain(stoker_cuda_copier* copier) {
  return Guard([&]() -> int {
    if (int bad = Live(copier, HandleKind::kCopier, "copier")) return bad;
    return Check(copier->copier->Drain());
  });
}

void stoker_cuda_copier_destroy(stoker_cuda_copier* copier) {
  Close(copier, HandleKind::kCopier);
}

}  // extern "C"
