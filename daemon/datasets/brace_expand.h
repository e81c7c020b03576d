// Brace patterns as WebDataset users write shard lists, with the rules of
// the braceexpand package webdataset uses:
//   "train-{000000..001023}.tar"  1024 paths, zero-padded to 6 digits
//   "{a,b}/x-{0..9..3}.tar"       a/x-0.tar a/x-3.tar ... b/x-9.tar
// A range is padded to its longer endpoint when either endpoint starts with
// a zero (as braceexpand); a descending range counts down; braces may nest.
// "{x}" (one item, no range) and unmatched braces stay as written.
#ifndef STOKER_DAEMON_DATASETS_BRACE_EXPAND_H_
#define STOKER_DAEMON_DATASETS_BRACE_EXPAND_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace stoker {

// Appends the expansion of `pattern` to *out. INVALID_ARGUMENT when *out
// would hold more than `max_paths` paths or `max_bytes` bytes of paths (the
// message names the pattern).
absl::Status ExpandBraces(const std::string& pattern, size_t max_paths,
                          std::vector<std::string>* out,
                          size_t max_bytes = size_t{64} << 20);

}  // namespace stoker

#endif  // STOKER_DAEMON_DATASETS_BRACE_EXPAND_H_
