#!/usr/bin/env bash
# Writes the seed corpus of fuzz_request: CreateJobRequests in protobuf's
# binary form, encoded from text by protoc. Run from anywhere; rewrites
# request_corpus/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
proto=$here/../../proto
out=$here/request_corpus
rm -rf "$out" && mkdir -p "$out"
seed() {
  protoc --encode=stoker.v1.CreateJobRequest -I "$proto" \
    "$proto/stoker/v1/loader.proto" >"$out/$1"
}
seed minimal <<<'spec { dataset { path: "/data/train" } batch_size: 64 slots: 8 }'
seed training <<<'spec { dataset { path: "/data/train" } batch_size: 256 slots: 4
  pipeline { random_resized_crop { height: 224 width: 224 } }
  pipeline { random_horizontal_flip { p: 0.5 } }
  pipeline { color_jitter { brightness: 0.4 contrast: 0.4 saturation: 0.4 } }
  pipeline { normalize { mean: [0.485, 0.456, 0.406] std: [0.229, 0.224, 0.225] } }
  output { height: 224 width: 224 dtype: DTYPE_FLOAT16 layout: LAYOUT_NCHW } seed: 7 epochs: 90 }'
seed evaluation <<<'spec { dataset { path: "/data/val" } batch_size: 100 slots: 2
  pipeline { resize { shorter_side: 256 } } pipeline { center_crop { height: 224 width: 224 } }
  shuffle: false drop_last: true on_error: ON_ERROR_FAIL name: "eval" }'
seed sharded <<<'spec { dataset { path: "/data/train" } batch_size: 32 slots: 8
  rank: 3 world_size: 8 shard_drop_last: true start_epoch: 4 start_batch: 17
  weight: 3 access_group: "trainers" }'
seed broadcast <<<'spec { dataset { path: "/data/train" } batch_size: 16 slots: 16
  sharing { mode: CONSUMER_MODE_BROADCAST max_lag: 4 on_lag: LAG_POLICY_SKIP min_consumers: 3 } }'
seed partition <<<'spec { dataset { path: "/data/train" } batch_size: 8 slots: 6
  sharing { mode: CONSUMER_MODE_PARTITION } }'
seed fields <<<'spec { dataset { shards: "/data/pairs-{00000..00099}.tar" } batch_size: 64 slots: 4
  pipeline { random_resized_crop { height: 224 width: 224 interpolation: INTERPOLATION_BICUBIC } }
  fields { name: "jpg;png" source: ["jpg", "png"] } fields { name: "txt" source: "txt" }
  fields { name: "json" source: "json" kind: FIELD_KIND_BYTES }
  missing: MISSING_FIELD_SKIP max_field_bytes: 4096 }'
seed manifest_fields <<<'spec { dataset { manifest: "/data/cc3m.csv" } batch_size: 32 slots: 2
  fields { name: "path" source: "path" } fields { name: "caption" source: "caption" } }'
seed out_of_range <<<'spec { dataset { path: "" } batch_size: 100000 slots: 0 weight: 1000 }'
