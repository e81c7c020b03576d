#!/usr/bin/env bash
# Builds stoker, installs Debian's torch and torchvision if they are
# missing, generates an ImageNet-like dataset (1024 JPEGs, ~450x390, ~95 KB)
# unless --data=DIR is given, and runs bench/compare_torch.py.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DCMAKE_BUILD_TYPE=Release
build=${STOKER_BUILD_DIR:-build}
if ! /usr/bin/python3 -c 'import torchvision, psutil' 2>/dev/null; then
  echo "compare_torch: installing python3-torchvision (Debian) ..."
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
    --no-install-recommends python3-torchvision python3-psutil >/dev/null ||
    { echo "compare_torch: python3-torchvision is missing and could not be" \
           "installed" >&2; exit 1; }
fi
data=
for arg in "$@"; do [[ $arg == --data=* ]] && data=${arg#--data=}; done
if [[ -z $data ]]; then
  work=$(mktemp -d /tmp/stoker-compare.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  data=$work/data
  "$build/bench/make_dataset" --out="$data" --classes=8 --per_class=128 \
    --height=430
  set -- --data="$data" "$@"
fi
# Not exec: the EXIT trap must still remove the generated dataset.
PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" \
  /usr/bin/python3 bench/compare_torch.py --stokerd="$build/daemon/stokerd" \
  --bench="$build/bench/bench_e2e" "$@"
