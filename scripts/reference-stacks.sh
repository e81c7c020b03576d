#!/usr/bin/env bash
# The reference matrix: every Python test that compares stoker with a
# reference (Pillow, torchvision, numpy, torch), run on three stacks from one
# build: this machine's (Debian 12), and Debian 13's and Debian unstable's
# python3-torch, -torchvision, -pil and -numpy, each in a debootstrap root.
#
#   scripts/reference-stacks.sh [OUT_DIR]      (as root; default OUT_DIR
#                                               /tmp/stoker-stacks)
#   scripts/reference-stacks.sh --roots        only build the roots
#
# The roots are built once and kept in $STOKER_STACKS_CACHE (default
# /var/cache/stoker-stacks, about 2.5 GB each; a root older than
# $STOKER_STACKS_MAX_DAYS, default 14, is rebuilt so that unstable moves on).
# The programs, libraries and Python package travel as the GPU bundle
# (bench/gpu/bundle.sh): a root needs no compiler and no gRPC. OUT_DIR
# receives one junit file and one log per stack, and matrix.md, the table
# docs/transforms.md keeps. STOKER_STACKS="host trixie" runs only those
# stacks, STOKER_STACK_SUITES="test_resample.py" only those suites.
# The suites run under pytest-xdist, one process per core.
# Exit status: nonzero when any stack had a failure.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
roots_only=0 in_namespace=
[[ ${1:-} == --roots ]] && { roots_only=1; shift; }
# Internal: run one root's suites in this (private) mount namespace.
[[ ${1:-} == --in-namespace ]] && { in_namespace=$2; shift 2; }
out=${1:-/tmp/stoker-stacks}
cache=${STOKER_STACKS_CACHE:-/var/cache/stoker-stacks}
max_days=${STOKER_STACKS_MAX_DAYS:-14}
stacks=(${STOKER_STACKS:-host trixie sid})
packages=(python3-torch python3-torchvision python3-pil python3-numpy
          python3-pytest python3-pytest-xdist python3-psutil)
# The suites that compare with a reference, and nothing that needs a GPU,
# a second daemon or a network server.
default_suites=(test_resample.py test_photos.py test_transforms.py test_augment.py
        test_recipe_transforms.py test_aug_mix.py test_gaussian_blur.py
        test_random_crop.py test_random_erasing.py test_random_choice.py
        test_color_jitter.py test_flip_gray.py test_formats.py
        test_masks.py test_views.py test_batch_transforms.py)
# STOKER_STACK_SUITES="test_resample.py" runs only those.
suites=(${STOKER_STACK_SUITES:-${default_suites[@]}})
[[ $(id -u) -eq 0 ]] || { echo "reference-stacks: run as root" >&2; exit 2; }
mkdir -p "$out" "$cache"
out=$(cd "$out" && pwd)

mirror=$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null |
  awk '{print $2}' | grep -v security | head -1)
[[ -n $mirror ]] || mirror=$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null |
  awk '{print $2}' | head -1)

apt_get=(/usr/bin/env DEBIAN_FRONTEND=noninteractive apt-get -y -qq
         -o Acquire::Check-Valid-Until=false)
# make_root SUITE: a minbase root of SUITE with the reference packages.
make_root() {
  local suite=$1 root=$cache/$1
  if [[ -e $root/.complete ]] &&
     [[ -z $(find "$root/.complete" -mtime +"$max_days") ]]; then
    chroot "$root" dpkg -s "${packages[@]}" >/dev/null 2>&1 ||
      { chroot "$root" "${apt_get[@]}" update && chroot "$root" "${apt_get[@]}" install \
          --no-install-recommends "${packages[@]}"; } >"$out/$suite-apt.log" 2>&1
    return
  fi
  # Never remove a root something is still mounted under (the repository).
  if [[ -d $root && -n $(findmnt -R -n -o TARGET "$root" 2>/dev/null) ]]; then
    echo "reference-stacks: $root has mounts under it; not removed" >&2
    return 1
  fi
  command -v debootstrap >/dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  echo "== building a $suite root in $root"
  rm -rf --one-file-system "$root"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$out/$suite-debootstrap.log" 2>&1 ||
    { tail -5 "$out/$suite-debootstrap.log"; return 1; }
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" "${apt_get[@]}" install --no-install-recommends "${packages[@]}" \
    >"$out/$suite-apt.log" 2>&1 ||
    { tail -5 "$out/$suite-apt.log"; return 1; }
  chroot "$root" apt-get clean
  touch "$root/.complete"
}

if ((roots_only)); then
  for stack in "${stacks[@]}"; do
    [[ $stack == host ]] || make_root "$stack" || exit 1
  done
  exit 0
fi

# The host's own stack: Debian 12's packages, the same list.
dpkg -s "${packages[@]}" >/dev/null 2>&1 ||
  "${apt_get[@]}" install --no-install-recommends "${packages[@]}" >"$out/host-apt.log" 2>&1 ||
  { tail -5 "$out/host-apt.log"; exit 1; }

# run_suites NAME SRC [chroot ROOT]: the versions, then the suites from the
# bundle, under the Python of the host or of the root (SRC: the repository
# as that Python sees it).
run_suites() {
  local name=$1 src=$2
  shift 2
  "$@" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 \
    python3 "$src/scripts/stack_matrix.py" --versions >"$repo/.stack-out/$name.json"
  "$@" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 \
    STOKERD="$src/.gpu-bundle/bin/stokerd" \
    MAKE_DATASET="$src/.gpu-bundle/bin/make_dataset" \
    DUMP_BATCHES="$src/.gpu-bundle/bin/dump_batches" \
    AUGMENT_TOOL="$src/.gpu-bundle/bin/augment_tool" \
    PILLOW_RESAMPLE_TOOL="$src/.gpu-bundle/bin/pillow_resample_tool" \
    COLOR_JITTER_TOOL="$src/.gpu-bundle/bin/color_jitter_tool" \
    STOKER_SOURCE_DIR="$src" PYTHONPATH="$src/.gpu-bundle/python" \
    PYTHONDONTWRITEBYTECODE=1 \
    python3 -m pytest -q -p no:cacheprovider -o addopts= -rfE --tb=short \
    -n "$(nproc)" --durations=10 \
    --junitxml="$src/.stack-out/$name.xml" "${suites[@]/#/$src/tests/python/}"
}

if [[ -n $in_namespace ]]; then
  # Mounts made here are private to this namespace: they go with it, even
  # when the run is killed.
  root=$cache/$in_namespace
  for m in proc sys dev dev/shm dev/pts; do mount --bind "/$m" "$root/$m"; done
  mkdir -p "$root/stoker" && mount --bind "$repo" "$root/stoker"
  run_suites "$in_namespace" /stoker chroot "$root"
  exit
fi

# The bundle, built as whoever asked through sudo (not as root in their tree).
builder=()
[[ -n ${SUDO_USER:-} ]] && builder=(sudo -u "$SUDO_USER")
"${builder[@]}" bash "$repo/bench/gpu/bundle.sh" "$repo/.gpu-bundle" >"$out/bundle.log" 2>&1 ||
  { tail -20 "$out/bundle.log"; exit 1; }

status=0
for stack in "${stacks[@]}"; do
  start=$SECONDS
  log=$out/$stack.log
  rm -rf "$repo/.stack-out" && mkdir -p "$repo/.stack-out"
  if [[ $stack == host ]]; then
    run_suites host "$repo" >"$log" 2>&1 || status=1
  else
    make_root "$stack" || { status=1; echo "$stack: no root" | tee "$log"; continue; }
    unshare --mount --propagation private bash "$0" --in-namespace "$stack" \
      >"$log" 2>&1 || status=1
  fi
  cp "$repo/.stack-out/$stack".{xml,json} "$out/" 2>/dev/null
  echo "$stack: $(tail -1 "$log") ($((SECONDS - start)) s)"
done
rm -rf "$repo/.stack-out"
python3 "$repo/scripts/stack_matrix.py" "$out" "${stacks[@]}" >"$out/matrix.md"
cat "$out/matrix.md"
exit $status
