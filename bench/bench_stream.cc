// What a streamed dataset costs before its first byte is read, and what its
// order gives up:
//  1. LAION-2B's scale (200k shards, 2e9 samples): an index file of that
//     size parsed into the shard table, the names expanded, their fetch
//     URLs mapped (the cache's view of them), two epochs' orders, with the
//     time each takes and the memory the job then holds;
//  2. the shuffle's quality on a class-sorted set (ImageNet's shape: 1000
//     classes of 1281 samples, shards of 1000 samples written in class
//     order, so a shard holds one or two classes): distinct classes per
//     batch of 256 and the mean distance between consecutive samples'
//     dataset positions, for a global permutation and for windows of 1 to
//     256 shards.
//
//   build/bench/bench_stream
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "daemon/datasets/brace_expand.h"
#include "daemon/datasets/shard_table.h"
#include "daemon/jobs/epoch_order.h"
#include "daemon/jobs/stream_order.h"
#include "daemon/remote/remote_url.h"

namespace {

using stoker::ShardRun;
using stoker::StreamOrder;

double Seconds(absl::Time since) {
  return absl::ToDoubleSeconds(absl::Now() - since);
}

void Scale() {
  constexpr int kShards = 200000;
  std::string text = absl::StrCat(stoker::kShardIndexHeader, "\n");
  for (int s = 0; s < kShards; ++s) {
    absl::StrAppendFormat(&text, "%06d.tar\t10000\t524288000\t\"%032x\"\n", s,
                          s * 2654435761u);
  }
  absl::Time start = absl::Now();
  std::vector<std::string> names;
  if (!stoker::ExpandBraces("s3://laion2b/shards/{000000..199999}.tar",
                            size_t{1} << 20, &names)
           .ok()) {
    return;
  }
  const double expand = Seconds(start);
  start = absl::Now();
  auto parsed =
      stoker::ParseShardIndex(text, "s3://laion2b/shards/stoker-index.tsv");
  stoker::ShardTable::Builder builder;
  for (const std::string& name : names) {
    if (!builder.Add(name, parsed->at(name)).ok()) return;
  }
  const auto table = builder.Build();
  parsed->clear();
  const double parse = Seconds(start);
  start = absl::Now();
  // As StreamFeed keeps them: each fetch URL's hash to its shard.
  absl::flat_hash_map<size_t, uint32_t> identity;
  stoker::FetchAccess access{.endpoint_url = "http://10.0.0.5:9000",
                             .path_style = true};
  for (uint32_t s = 0; s < kShards; ++s) {
    identity.emplace(
        std::hash<std::string>{}(*stoker::FetchUrlOf(names[s], access)), s);
  }
  const uint64_t identity_bytes =
      (sizeof(std::pair<size_t, uint32_t>) + 1) * identity.capacity();
  const double urls = Seconds(start);
  start = absl::Now();
  uint64_t order_bytes = 0;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    const StreamOrder order(table->counts(), 1, epoch, {3, 8, false}, 16, true);
    order_bytes += order.runs().size() * sizeof(ShardRun) +
                   8 * (order.windows() + 1) + 8 * kShards;  // + first uses
    (void)order.Window(0);
  }
  const double orders = Seconds(start);
  const uint64_t held = table->MemoryBytes() + identity_bytes + order_bytes +
                        8 * kShards;  // draw ids' bases
  std::printf(
      "scale: %d shards, %.2e samples\n"
      "  expand the pattern   %.3f s\n"
      "  parse + table        %.3f s  (table %.1f MB)\n"
      "  fetch URLs mapped    %.3f s  (%.1f MB)\n"
      "  two epochs' orders   %.3f s  (%.1f MB, rank 3 of 8, window 16)\n"
      "  total %.3f s; the job holds %.1f MB\n",
      kShards, double(table->samples()), expand, parse,
      table->MemoryBytes() / 1e6, urls, identity_bytes / 1e6, orders,
      order_bytes / 1e6, expand + parse + urls + orders, held / 1e6);
}

struct Quality {
  double classes_per_batch = 0;
  double distance = 0;  // between consecutive samples, as a share of N
};

Quality Measure(const std::vector<uint64_t>& order, uint32_t per_class,
                uint64_t n) {
  Quality q;
  uint64_t batches = 0;
  for (size_t b = 0; b + 256 <= order.size(); b += 256, ++batches) {
    std::set<uint64_t> classes;
    for (size_t i = b; i < b + 256; ++i) classes.insert(order[i] / per_class);
    q.classes_per_batch += classes.size();
  }
  q.classes_per_batch /= batches;
  for (size_t i = 1; i < order.size(); ++i) {
    q.distance += std::abs(double(order[i]) - double(order[i - 1]));
  }
  q.distance /= double(order.size() - 1) * double(n);
  return q;
}

void ShuffleQuality() {
  constexpr uint32_t kClasses = 1000, kPerClass = 1281, kPerShard = 1000;
  constexpr uint64_t kSamples = uint64_t{kClasses} * kPerClass;
  auto counts = std::make_shared<std::vector<uint32_t>>();
  for (uint64_t left = kSamples; left > 0;) {
    counts->push_back(uint32_t(std::min<uint64_t>(left, kPerShard)));
    left -= counts->back();
  }
  std::printf(
      "\nshuffle quality: %u classes x %u samples, class-sorted, "
      "%zu shards of %u; batch 256\n",
      kClasses, kPerClass, counts->size(), kPerShard);
  std::printf("  %-22s %20s %28s\n", "order", "classes per batch",
              "consecutive distance / N");
  const auto row = [](const std::string& name, const Quality& q) {
    std::printf("  %-22s %20.1f %28.4f\n", name.c_str(), q.classes_per_batch,
                q.distance);
  };
  {
    std::vector<uint64_t> global;
    for (uint32_t i : stoker::EpochPermutation(1, 0, kSamples, true)) {
      global.push_back(i);
    }
    row("global permutation", Measure(global, kPerClass, kSamples));
  }
  for (uint32_t window : {1u, 4u, 16u, 64u, 256u}) {
    const StreamOrder order(counts, 1, 0, {}, window, true);
    std::vector<uint64_t> samples;
    for (uint32_t j = 0; j < order.windows(); ++j) {
      for (const auto& s : order.Window(j)) {
        samples.push_back(uint64_t{s.shard} * kPerShard + s.member);
      }
    }
    row(absl::StrCat("window of ", window, " shards"),
        Measure(samples, kPerClass, kSamples));
  }
}

}  // namespace

int main() {
  Scale();
  ShuffleQuality();
  return 0;
}
