// SampleSchema: what each sample of a dataset holds, as a job asks for it
// (the datasets layer's plain form of JobConfig's fields): a classic
// sample, an image and its label, or named fields, each read from a shard
// member of one of its suffixes or from a manifest column. The index of a
// dataset depends on it, so that jobs share an index only when their
// schemas agree (see DatasetKey).
#ifndef STOKER_DAEMON_DATASETS_SAMPLE_SCHEMA_H_
#define STOKER_DAEMON_DATASETS_SAMPLE_SCHEMA_H_

#include <string>
#include <vector>

namespace stoker {

// Where a classic shard sample's label comes from: its "cls" member (an
// integer as text), or, when `json_field` is set, that field of its
// "json" member (a top-level name, or a JSON pointer when it starts with
// '/').
struct LabelSource {
  std::string json_field;
};

struct SchemaField {
  // Shards: member suffixes, the first one a sample has taken. Manifests:
  // one column (CSV) or key (JSON lines).
  std::vector<std::string> source;
  // Manifests: the column names the sample's image file (read as a file,
  // not kept in the index).
  bool image = false;
};

struct SampleSchema {
  LabelSource labels;               // classic shards
  std::vector<SchemaField> fields;  // empty: a classic sample
  // A sample without some field is left out of the index (else kept, and
  // the field is absent).
  bool skip_missing = false;

  bool classic() const { return fields.empty(); }
};

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_SAMPLE_SCHEMA_H_
