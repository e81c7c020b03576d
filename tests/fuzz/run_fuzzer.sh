#!/usr/bin/env bash
# Runs a fuzz target for a bounded time over its committed seed corpus,
# writing new inputs and any crash to a scratch directory that is removed
# afterwards (a crash is printed, and fails the test).
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3
scratch=$(mktemp -d /tmp/stoker-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=262144 -print_final_stats=1 -artifact_prefix="$scratch/" \
  "$scratch" "$corpus" 2>&1 | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added|==[0-9]+==ERROR|SUMMARY|INFO: Seed)" || true
status=${PIPESTATUS[0]}
for crash in "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-*; do
  [[ -e $crash ]] || continue
  echo "fuzzer found a failing input: $(basename "$crash") ($(wc -c <"$crash") bytes, base64 below)"
  base64 -w 0 "$crash"; echo
  status=1
done
exit "$status"
