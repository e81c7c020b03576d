// stoker_probe: a client process for tests that need a real second process
// (killed with SIGKILL, frozen with SIGSTOP, or running as another user).
//
//   stoker_probe consume --target=T --job=J --name=N --take=K --release=R
//       --log=F      attaches (prefetch 1), receives K batches, logs each as
//                    "batch <epoch> <index> <dataset indices...>", releases
//                    the first R, waits until the daemon has counted those
//                    releases, logs "ready" and sleeps until killed.
//   stoker_probe train --target=T --dataset=D --log=F --epochs=E
//       [--step_ms=M] ...
//                    a resuming trainer: resumes after the last batch its
//                    log holds (deleting its previous job), then steps M ms
//                    on each batch, confirms
//                    each batch (CheckIntact) and logs it before releasing
//                    it, or logs "void <code> <message>" for one taken back
//                    (not trained on); reconnects through daemon restarts;
//                    when its stream ends for good (evicted, lease timed
//                    out) logs "restart <code> <message>" and resumes from
//                    its log again; logs "end" when every epoch is done.
//   stoker_probe probe --target=T --private_job=A --shared_job=B
//       --segment=S  what another user can and cannot do; prints
//                    "key code" lines.
//   stoker_probe create --target=T --dataset=D [--weight=W] [--on_error=fail]
//       [--epochs=E] [--batches=K] [--hold]
//                    creates a job (unshuffled, 16x16) and prints "create
//                    <code> <message>", "create_ms <ms>" and "job <id>";
//                    then receives and releases K batches (-1: until the
//                    job ends), printing "took <n>" and any error as "next
//                    <code> <message>"; with --hold, sleeps until killed.
//   stoker_probe step --target=T --job=J --name=N --log=F --step_ms=M
//       [--prefetch=P] [--reconnect_ms=R]
//                    a trainer that confirms each batch: logs "got <epoch>
//                    <index>" when Next() returns it, sleeps M ms (its
//                    step), then confirms it (CheckIntact) and logs "used
//                    <epoch> <index> <dataset indices...>" or "void <epoch>
//                    <index> <code> <message>", and releases it; logs "next
//                    <code> <message>" and exits when Next() fails.
//   Any command takes --as=UID:GID[:G1,G2...]: started as root, the probe
//   becomes that user, group and supplementary groups before it connects.
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/src/ring_mapping.h"
#include "common/cli.h"
#include "common/naming.h"
#include "common/unique_fd.h"
#include "stoker/client.h"

ABSL_FLAG(std::string, target, "", "daemon address");
ABSL_FLAG(std::string, job, "", "job to attach to");
ABSL_FLAG(std::string, name, "probe", "consumer name");
ABSL_FLAG(int, take, 1, "batches to receive");
ABSL_FLAG(int, release, 0, "of those, how many to release");
ABSL_FLAG(std::string, log, "", "file to append batch lines to");
ABSL_FLAG(std::string, dataset, "", "train: dataset path");
ABSL_FLAG(uint32_t, epochs, 1, "train: epochs");
ABSL_FLAG(uint32_t, batch_size, 4, "train: batch size");
ABSL_FLAG(uint64_t, seed, 1, "train: seed");
ABSL_FLAG(std::string, private_job, "", "probe: a job not shared with us");
ABSL_FLAG(std::string, shared_job, "", "probe: a job shared with our group");
ABSL_FLAG(std::string, segment, "", "probe: the private job's segment name");
ABSL_FLAG(uint32_t, weight, 1, "create: the job's weight");
ABSL_FLAG(std::string, on_error, "replace", "create: replace or fail");
ABSL_FLAG(int, batches, 0, "create: batches to consume (-1: all)");
ABSL_FLAG(bool, hold, false, "create: sleep until killed at the end");
ABSL_FLAG(std::string, as, "", "UID:GID[:G1,G2...] to become first");
ABSL_FLAG(int, step_ms, 0, "step, train: the trainer's step");
ABSL_FLAG(uint32_t, prefetch, 1, "step: the consumer's prefetch");
ABSL_FLAG(int, reconnect_ms, 0, "step: ConsumerOptions::reconnect_timeout");

namespace {

using stoker::Client;
using stoker::UniqueFd;

void Append(const std::string& path, const std::string& line) {
  // One write per line: a SIGKILL leaves whole lines only.
  const UniqueFd fd(
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd) return;
  const std::string text = line + "\n";
  (void)!::write(fd.get(), text.data(), text.size());
}

std::string BatchLine(const stoker::Batch& batch) {
  std::string line = absl::StrCat("batch ", batch.epoch(), " ", batch.index());
  for (int64_t i : batch.indices()) absl::StrAppend(&line, " ", i);
  return line;
}

std::unique_ptr<Client> ConnectPatiently(const std::string& target) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto client = Client::Connect(target, std::chrono::seconds(2));
    if (client.ok()) return *std::move(client);
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s\n",
                   std::string(client.status().message()).c_str());
      std::exit(3);
    }
  }
}

int Consume() {
  auto client = ConnectPatiently(absl::GetFlag(FLAGS_target));
  auto consumer = client->Attach(absl::GetFlag(FLAGS_job),
                                 {.prefetch = 1,
                                  .name = absl::GetFlag(FLAGS_name),
                                  .reconnect_timeout = {}});
  if (!consumer.ok()) {
    std::fprintf(stderr, "attach: %s\n", consumer.status().ToString().c_str());
    return 2;
  }
  const std::string log = absl::GetFlag(FLAGS_log);
  std::vector<stoker::Batch> held;
  for (int i = 0; i < absl::GetFlag(FLAGS_take); ++i) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) {
      std::fprintf(stderr, "next: %s\n", batch.status().ToString().c_str());
      return 2;
    }
    Append(log, BatchLine(*batch));
    held.push_back(*std::move(batch));
  }
  const int release = absl::GetFlag(FLAGS_release);
  for (int i = 0; i < release; ++i) held[i].Release();
  // Ready only once the daemon has counted the releases, so that what the
  // log says was released is what the daemon knows.
  for (;;) {
    auto stats = client->GetStats();
    bool counted = false;
    for (const auto& job : stats.ok() ? stats->jobs : decltype(stats->jobs)()) {
      for (const auto& c : job.consumer) {
        counted = counted || (c.name == absl::GetFlag(FLAGS_name) &&
                              c.batches_released == uint64_t(release));
      }
    }
    if (counted) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Append(log, "ready");
  for (;;) ::pause();
}

std::string StatusWords(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), " ",
                      status.message());
}

int Step() {
  auto client = ConnectPatiently(absl::GetFlag(FLAGS_target));
  auto consumer = client->Attach(
      absl::GetFlag(FLAGS_job), {.prefetch = absl::GetFlag(FLAGS_prefetch),
                                 .name = absl::GetFlag(FLAGS_name),
                                 .reconnect_timeout = std::chrono::milliseconds(
                                     absl::GetFlag(FLAGS_reconnect_ms))});
  const std::string log = absl::GetFlag(FLAGS_log);
  if (!consumer.ok()) {
    Append(log, "next " + StatusWords(consumer.status()));
    return 2;
  }
  for (;;) {
    auto batch = (*consumer)->Next();
    if (!batch.ok()) {
      Append(log, "next " + StatusWords(batch.status()));
      return 0;
    }
    const std::string place = absl::StrCat(batch->epoch(), " ", batch->index());
    Append(log, "got " + place);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(absl::GetFlag(FLAGS_step_ms)));
    if (absl::Status intact = batch->CheckIntact(); intact.ok()) {
      std::string line = "used " + place;
      for (int64_t i : batch->indices()) absl::StrAppend(&line, " ", i);
      Append(log, line);
    } else {
      Append(log, absl::StrCat("void ", place, " ", StatusWords(intact)));
    }
    batch->Release();
  }
}

// The trainer's own record: lines of the log.
struct TrainerLog {
  std::string job_id;
  bool have_position = false;
  uint64_t epoch = 0, index = 0;  // the last batch logged
};

TrainerLog ReadTrainerLog(const std::string& path) {
  TrainerLog log;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    if (words.size() >= 2 && words[0] == "job") log.job_id = words[1];
    if (words.size() >= 3 && words[0] == "batch" &&
        absl::SimpleAtoi(words[1], &log.epoch) &&
        absl::SimpleAtoi(words[2], &log.index)) {
      log.have_position = true;
    }
  }
  return log;
}

// One run of a trainer: 0 when every epoch is done, 1 to start again from
// its log (its stream ended for good: evicted, lease timed out), 2 when it
// cannot go on.
int TrainOnce(Client& client) {
  const std::string log_path = absl::GetFlag(FLAGS_log);
  const TrainerLog log = ReadTrainerLog(log_path);
  stoker::JobSpec spec{.dataset_path = absl::GetFlag(FLAGS_dataset),
                       .batch_size = absl::GetFlag(FLAGS_batch_size),
                       .slots = 3,
                       .height = 16,
                       .width = 16,
                       .seed = absl::GetFlag(FLAGS_seed),
                       .epochs = absl::GetFlag(FLAGS_epochs),
                       .name = absl::GetFlag(FLAGS_name)};
  if (!log.job_id.empty()) (void)client.DeleteJob(log.job_id);
  if (log.have_position) {
    // The batch after the last one logged: the log is the checkpoint.
    spec.start = {log.epoch, log.index + 1};
  }
  absl::StatusOr<stoker::JobInfo> job;
  for (int attempt = 0; attempt < 600; ++attempt) {
    job = client.CreateJob(spec);
    if (absl::IsInvalidArgument(job.status()) && spec.start.batch > 0 &&
        absl::StrContains(job.status().message(), "start_batch")) {
      // The last batch logged ended its epoch: resume at the next one.
      spec.start = {spec.start.epoch + 1, 0};
      continue;
    }
    if (job.ok() || !absl::IsUnavailable(job.status())) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!job.ok()) {
    std::fprintf(stderr, "create: %s\n", job.status().ToString().c_str());
    return 2;
  }
  Append(log_path, "job " + job->id);
  auto consumer = client.Attach(
      job->id, {.prefetch = 2, .name = absl::GetFlag(FLAGS_name)});
  if (!consumer.ok()) {
    std::fprintf(stderr, "attach: %s\n", consumer.status().ToString().c_str());
    return 2;
  }
  std::string current = job->id;
  for (;;) {
    auto batch = (*consumer)->Next();
    if (absl::IsOutOfRange(batch.status())) break;
    if (!batch.ok()) {
      Append(log_path, "restart " + StatusWords(batch.status()));
      return 1;
    }
    if (const std::string id = (*consumer)->job().id; id != current) {
      current = id;  // re-created after a daemon restart
      Append(log_path, "job " + id);
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(absl::GetFlag(FLAGS_step_ms)));
    // Trained on only once confirmed: a batch taken back while this
    // process was stopped goes unlogged, and comes again.
    if (absl::Status intact = batch->CheckIntact(); !intact.ok()) {
      Append(log_path, "void " + StatusWords(intact));
      continue;
    }
    Append(log_path, BatchLine(*batch));
    batch->Release();
  }
  Append(log_path, "end");
  (void)client.DeleteJob(current);
  return 0;
}

int Train() {
  auto client = ConnectPatiently(absl::GetFlag(FLAGS_target));
  for (;;) {
    if (const int result = TrainOnce(*client); result != 1) return result;
  }
}

void Print(const std::string& key, const absl::Status& status) {
  std::printf("%s %s\n", key.c_str(),
              absl::StatusCodeToString(status.code()).c_str());
}

int Probe() {
  auto client = Client::Connect(absl::GetFlag(FLAGS_target));
  Print("connect", client.status());
  if (!client.ok()) return 2;
  const std::string private_job = absl::GetFlag(FLAGS_private_job);
  const std::string shared_job = absl::GetFlag(FLAGS_shared_job);
  if (auto jobs = (*client)->ListJobs(); jobs.ok()) {
    for (const auto& job : *jobs) std::printf("listed %s\n", job.id.c_str());
  }
  if (auto stats = (*client)->GetStats(); stats.ok()) {
    for (const auto& job : stats->jobs) {
      std::printf("stats %s\n", job.job_id.c_str());
    }
  }
  Print("get_private", (*client)->GetJob(private_job).status());
  Print("attach_private", (*client)->Attach(private_job).status());
  Print("delete_private", (*client)->DeleteJob(private_job));
  Print("ring_private", stoker::internal::RingMapping::Open(
                            stoker::RingSocketPath(stoker::SocketPathFromTarget(
                                absl::GetFlag(FLAGS_target))),
                            private_job)
                            .status());
  const std::string segment = "/dev/shm/" + absl::GetFlag(FLAGS_segment);
  const UniqueFd fd(::open(segment.c_str(), O_RDONLY | O_CLOEXEC));
  Print("open_segment_private",
        fd ? absl::OkStatus() : absl::ErrnoToStatus(errno, "open"));
  Print("get_shared", (*client)->GetJob(shared_job).status());
  auto consumer = (*client)->Attach(shared_job);
  Print("attach_shared", consumer.status());
  if (consumer.ok()) {
    auto batch = (*consumer)->Next();
    Print("next_shared", batch.status());
    if (batch.ok()) {
      std::printf("first_index %lld\n",
                  static_cast<long long>(batch->indices()[0]));
      // The mapping is read-only, and cannot be made writable.
      const uintptr_t page =
          reinterpret_cast<uintptr_t>(batch->images().data()) &
          ~uintptr_t{4095};
      const int rc = ::mprotect(reinterpret_cast<void*>(page), 4096,
                                PROT_READ | PROT_WRITE);
      Print("mprotect_write", rc == 0 ? absl::OkStatus()
                                      : absl::ErrnoToStatus(errno, "mprotect"));
    }
  }
  auto own = (*client)->CreateJob({.dataset_path = absl::GetFlag(FLAGS_dataset),
                                   .batch_size = 2,
                                   .slots = 2,
                                   .height = 8,
                                   .width = 8});
  Print("create_own", own.status());
  if (own.ok()) std::printf("own_job %s\n", own->id.c_str());
  std::fflush(stdout);
  return 0;
}

int Create() {
  auto client = Client::Connect(absl::GetFlag(FLAGS_target));
  Print("connect", client.status());
  std::fflush(stdout);
  if (!client.ok()) return 2;
  const stoker::JobSpec spec{.dataset_path = absl::GetFlag(FLAGS_dataset),
                             .batch_size = absl::GetFlag(FLAGS_batch_size),
                             .slots = 4,
                             .height = 16,
                             .width = 16,
                             .shuffle = false,
                             .epochs = absl::GetFlag(FLAGS_epochs),
                             .on_error = absl::GetFlag(FLAGS_on_error) == "fail"
                                             ? stoker::OnError::kFail
                                             : stoker::OnError::kReplace,
                             .weight = absl::GetFlag(FLAGS_weight)};
  const auto start = std::chrono::steady_clock::now();
  auto job = (*client)->CreateJob(spec);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::printf("create %s %s\ncreate_ms %lld\n",
              absl::StatusCodeToString(job.status().code()).c_str(),
              std::string(job.status().message()).c_str(),
              static_cast<long long>(ms));
  if (job.ok()) std::printf("job %s\n", job->id.c_str());
  std::fflush(stdout);
  const int batches = absl::GetFlag(FLAGS_batches);
  if (job.ok() && batches != 0) {
    auto consumer = (*client)->Attach(job->id);
    int took = 0;
    absl::Status error = consumer.status();
    while (error.ok() && (batches < 0 || took < batches)) {
      auto batch = (*consumer)->Next();
      error = batch.status();
      took += batch.ok();
    }
    std::printf("took %d\n", took);
    if (!error.ok()) {
      std::printf("next %s %s\n",
                  absl::StatusCodeToString(error.code()).c_str(),
                  std::string(error.message()).c_str());
    }
    std::fflush(stdout);
  }
  if (absl::GetFlag(FLAGS_hold)) {
    for (;;) ::pause();
  }
  return 0;
}

// --as=UID:GID[:G1,G2...]: false if it cannot be applied.
bool BecomeUser(const std::string& as) {
  if (as.empty()) return true;
  std::vector<std::string> parts = absl::StrSplit(as, ':');
  uint32_t uid = 0, gid = 0;
  if (parts.size() < 2 || !absl::SimpleAtoi(parts[0], &uid) ||
      !absl::SimpleAtoi(parts[1], &gid)) {
    return false;
  }
  std::vector<gid_t> groups;
  if (parts.size() > 2 && !parts[2].empty()) {
    for (absl::string_view g : absl::StrSplit(parts[2], ',')) {
      uint32_t n = 0;
      if (!absl::SimpleAtoi(g, &n)) return false;
      groups.push_back(n);
    }
  }
  return ::setgroups(groups.size(), groups.data()) == 0 && ::setgid(gid) == 0 &&
         ::setuid(uid) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> rest = stoker::ParseCommandLine(
      argc, argv, "stoker_probe consume|train|probe|create --flags");
  const std::string command = rest.size() > 1 ? rest[1] : "";
  if (!BecomeUser(absl::GetFlag(FLAGS_as))) {
    std::fprintf(stderr, "cannot become %s: %s\n",
                 absl::GetFlag(FLAGS_as).c_str(), std::strerror(errno));
    return 126;
  }
  if (command == "consume") return Consume();
  if (command == "train") return Train();
  if (command == "step") return Step();
  if (command == "probe") return Probe();
  if (command == "create") return Create();
  std::fprintf(stderr,
               "usage: stoker_probe consume|train|probe|create --flags\n");
  return 2;
}
