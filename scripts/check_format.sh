#!/usr/bin/env bash
# Checks that every C++ file of the tree (daemon, client, common, tests,
# bench, python) follows .clang-format; prints the files that do not.
#   scripts/check_format.sh          check (exit 1 if any file differs)
#   scripts/check_format.sh --fix    rewrite them in place
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=$(command -v clang-format || command -v clang-format-14 || true)
if [[ -z $clang_format ]]; then
  echo "clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(find daemon client common tests bench python \
  \( -name '*.h' -o -name '*.cc' \) -type f | sort)
if [[ ${1:-} == --fix ]]; then
  "$clang_format" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$clang_format" --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if ((${#bad[@]} > 0)); then
  printf '%s\n' "${bad[@]}"
  echo "${#bad[@]} of ${#files[@]} files do not follow .clang-format;" \
       "scripts/check_format.sh --fix rewrites them" >&2
  exit 1
fi
echo "all ${#files[@]} C++ files follow .clang-format"
