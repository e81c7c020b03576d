#!/usr/bin/env bash
# stoker on a GPU machine, in three plans of under 9 minutes each (one
# device call each):
#   bench (default): the CUDA tests, fidelity on 500 generated photos,
#     host-to-device bandwidth from the ring, copy/compute overlap, ResNet-50
#     trained on stoker (the loader's own copy stream) against torch's
#     DataLoader, and decode scaling over 1..15 workers with what limits it;
#   share: 1, 2 and 4 ResNet-18 trainers sharing the GPU and one stokerd
#     against each with its own DataLoader, and a broadcast job; the recipe
#     ops byte-exact against this torchvision;
#   suite: the rest of the Python suite, every test's outcome named.
#
#   bench/gpu/bundle.sh                       here: build and gather (.gpu-bundle)
#   bench/gpu/run.sh OUT_DIR [--smoke] [--plan=bench|share|suite|all]
#                                             there, from the repository root
#
# The machine needs Python 3 with torch, torchvision, Pillow and psutil
# (nvidia-ml-py for the GPU's busy figure), and nothing of stoker's: the
# programs, libraries and Python package come from the bundle
# ($STOKER_BUNDLE, default .gpu-bundle). The datasets are generated there.
# OUT_DIR receives summary.md (the table), results.jsonl (one line per
# figure), run.log and logs.tar.gz (every part's whole output). A part that
# fails or runs out of time is marked so and the others still run; the exit
# status is nonzero if any failed.
#
# --smoke runs every part of both plans small and on the CPU (the CUDA
# parts skip), in a few minutes on 2 cores: it checks the script, not the
# figures.
# STOKER_GPU_PARTS="fidelity h2d" runs only those parts (and environment),
# for a second try at what failed; STOKER_GPU_DATA=DIR keeps the generated
# datasets there and reuses them on the next run.
set -uo pipefail
out=${1:?usage: bench/gpu/run.sh OUT_DIR [--smoke]}
smoke=0 plan=bench
for arg in "${@:2}"; do
  case $arg in
    --smoke) smoke=1 plan=all ;;
    --plan=bench | --plan=share | --plan=suite | --plan=all) plan=${arg#--plan=} ;;
    *) echo "run.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bundle=$(cd "${STOKER_BUNDLE:-$repo/.gpu-bundle}" && pwd) ||
  { echo "run.sh: no bundle; make one with bench/gpu/bundle.sh" >&2; exit 2; }
python=${PYTHON:-python3}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/stoker-gpu.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
results=$out/results.jsonl
: >"$results"
exec > >(tee "$out/run.log") 2>&1

finish() {
  tar -C "$work" -czf "$out/logs.tar.gz" logs 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT

export STOKERD=$bundle/bin/stokerd BENCH_E2E=$bundle/bin/bench_e2e
export MAKE_DATASET=$bundle/bin/make_dataset DUMP_BATCHES=$bundle/bin/dump_batches
export PILLOW_RESAMPLE_TOOL=$bundle/bin/pillow_resample_tool
export COLOR_JITTER_TOOL=$bundle/bin/color_jitter_tool AUGMENT_TOOL=$bundle/bin/augment_tool
export STOKER_SOURCE_DIR=$repo PYTHONPATH=$bundle/python:$here
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 STOKER_GPU_LOGS=$logs
cores=$(nproc)
# The parts of each plan, by the first word of their names.
declare -A plan_parts=(
  [bench]="cuda python fidelity h2d overlap e2e scaling"
  [share]="trainers recipe"
  [suite]="suite")
workers=$((cores > 1 ? cores - 1 : 1))  # one core left to the trainer
failed=0

# part NAME SECONDS COMMAND...: runs it under a time limit, its output in
# logs/NAME.log, its RESULT lines into results.jsonl.
part() {
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  [[ $plan == all || $name == environment || $name == datasets ||
     " ${plan_parts[$plan]} " == *" ${name%%_*} "* ]] || return 0
  if [[ -n ${STOKER_GPU_PARTS:-} && $name != environment &&
        " ${STOKER_GPU_PARTS//,/ } " != *" $name "* ]]; then
    return 0
  fi
  echo "== $name (at most ${limit} s)"
  timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  sed -n 's/^RESULT //p' "$logs/$name.log" | tee -a "$results"
  local state=passed
  ((rc == 124 || rc == 137)) && state=timed_out
  ((rc != 0 && rc != 124 && rc != 137)) && state=failed
  [[ $state == passed ]] || { failed=1; tail -20 "$logs/$name.log"; }
  echo "{\"part\": \"status\", \"name\": \"$name\", \"state\": \"$state\", \"rc\": $rc, \"seconds\": $((SECONDS - start))}" |
    tee -a "$results"
}

# make_data DIR CLASSES PER_CLASS [make_dataset flags]: one generator per
# core, each writing its own classes, gathered into DIR.
make_data() {
  local dir=$1 classes=$2 per_class=$3 jobs i
  shift 3
  jobs=$((classes < cores ? classes : cores))
  for ((i = 0; i < jobs; i++)); do
    local n=$((classes / jobs + (i < classes % jobs ? 1 : 0)))
    "$MAKE_DATASET" --out="$dir.part$i" --classes="$n" --per_class="$per_class" \
      --seed=$((i + 1)) "$@" >/dev/null &
  done
  wait
  mkdir -p "$dir"
  for ((i = 0; i < jobs; i++)); do
    for class in "$dir.part$i"/*/; do
      mv "$class" "$dir/p${i}_$(basename "$class")"
    done
    rmdir "$dir.part$i"
  done
  echo "$dir: $(find "$dir" -type f | wc -l) images, $(du -sm "$dir" | cut -f1) MB"
}
export -f make_data
export cores

environment() {
  echo "bundle commit $(cat "$bundle/COMMIT"); $cores cores; $(uname -r)"
  free -g | head -2
  df -h /dev/shm /tmp
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader ||
    echo "no nvidia-smi"
  "$python" - <<'EOF'
import json, platform, subprocess, sys
import numpy, PIL, torch, torchvision
import stoker
from stoker import _native
# The CPU as lscpu names it: cores against hyperthreads, for the scaling.
try:
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
except OSError:
    lscpu = ""
cpu = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
cpu = {k.strip(): v.strip() for k, v in cpu.items()}
info = {"part": "environment", "python": platform.python_version(),
        "cpu_model": cpu.get("Model name"), "cpus": cpu.get("CPU(s)"),
        "threads_per_core": cpu.get("Thread(s) per core"),
        "cores_per_socket": cpu.get("Core(s) per socket"),
        "sockets": cpu.get("Socket(s)"),
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "pillow": PIL.__version__, "numpy": numpy.__version__,
        "libstoker": stoker.library_version(),
        "libstoker_cuda": bool(_native.library().stoker_cuda_available()),
        "cuda": torch.cuda.is_available(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
print("RESULT " + json.dumps(info))
EOF
}
export -f environment
export python bundle

data=${STOKER_GPU_DATA:-$work/data}
# datasets: generated once per data folder; a folder this script did not
# write is never touched.
datasets() {
  [[ -e $data/.complete ]] && { echo "$data: reused"; return 0; }
  if [[ -n $(ls -A "$data" 2>/dev/null) && ! -e $data/.writing ]]; then
    echo "$data is not empty and was not written by run.sh" >&2
    return 1
  fi
  rm -rf "$data" && mkdir -p "$data" && touch "$data/.writing" &&
    bash -c "$1" && mv "$data/.writing" "$data/.complete"
}
export -f datasets
export data
if ((smoke)); then
  e2e=(--device=cpu --model=resnet18 --batch=8 --crop=64 --seconds=3 --warmup=1
       --workers=2)
  recipe_seconds=3
  part environment 60 bash -c environment
  part datasets 120 bash -c 'datasets "make_data $data/train 2 24 &&
    make_data $data/photos 2 5 &&
    make_data $data/small 2 16 --width=256 --height=256 --vary_size=false"'
  part cuda_tests 120 "$bundle/bin/cuda_tests"
  part python_cuda_tests 300 "$python" -m pytest -q -p no:cacheprovider -rs \
    "$repo/tests/python/test_cuda.py"
  part fidelity 300 "$python" "$here/fidelity.py" --data="$data/photos" --workers=2
  part h2d 120 "$python" "$here/h2d.py" --data="$data/small" --batch=8 --workers=2
  part overlap 120 "$python" "$here/overlap.py" --data="$data/small" --batch=8 --workers=2
  for transform in classic recipe; do
    for loader in stoker torch; do
      part "e2e_${transform}_$loader" 300 "$python" "$here/train_e2e.py" \
        --data="$data/train" --loader=$loader --transform=$transform "${e2e[@]}"
    done
  done
  part scaling 300 "$python" "$here/scaling.py" --data="$data/train" --workers=1,2 \
    --seconds=1
  part trainers 300 "$python" "$here/trainers.py" --data="$data/train" \
    --trainers=1,2 --workers=2 --seconds=2 --warmup=1 --batch=8 --crop=64 --device=cpu
  # The plumbing only: one quick test of each kind.
  recipe_tests=("$repo/tests/python/test_random_erasing.py::test_boxes_follow_torchvisions_distribution")
  suite_tests=("$repo/tests/python/test_augment.py::test_auto_augment_tables")
else
  part environment 60 bash -c environment
  # Each plan's datasets only (share needs the train set; suite none).
  [[ $plan == share ]] && sets='make_data $data/train 100 200' ||
    sets='make_data $data/train 100 200 && make_data $data/photos 10 50 &&
      make_data $data/small 8 512 --width=256 --height=256 --vary_size=false &&
      make_data $data/scaling 8 256'
  [[ $plan == suite ]] || part datasets 120 bash -c "datasets \"$sets\""
  part cuda_tests 60 "$bundle/bin/cuda_tests"
  part python_cuda_tests 90 "$python" -m pytest -q -p no:cacheprovider -rs \
    "$repo/tests/python/test_cuda.py"
  part fidelity 60 "$python" "$here/fidelity.py" --data="$data/photos" --workers=$workers
  part h2d 60 "$python" "$here/h2d.py" --data="$data/small" --workers=$workers
  part overlap 100 "$python" "$here/overlap.py" --data="$data/small" --workers=$workers
  for transform in classic recipe; do
    seconds=$([[ $transform == classic ]] && echo 60 || echo 30)
    for loader in stoker torch; do
      part "e2e_${transform}_$loader" $((seconds + 45)) "$python" "$here/train_e2e.py" \
        --data="$data/train" --loader=$loader --transform=$transform \
        --seconds=$seconds --warmup=8 --workers=$workers
    done
  done
  part scaling 120 "$python" "$here/scaling.py" --data="$data/scaling" \
    --workers=1,2,4,8,12,$workers
  part trainers 330 "$python" "$here/trainers.py" --data="$data/train" \
    --trainers=1,2,4 --workers=$workers --seconds=15 --warmup=6
  # TrivialAugmentWide, RandAugment, AutoAugment (test_augment), AugMix,
  # GaussianBlur, RandomErasing and the recipes' transforms: stoker's
  # images against this torchvision's for the same draws.
  recipe_tests=("$repo/tests/python/"{test_augment,test_aug_mix,test_gaussian_blur,test_random_erasing,test_recipe_transforms}.py)
  # The suite without the files recipe_exact runs.
  suite_tests=("$repo/tests/python" "${recipe_tests[@]/#/--ignore=}")
fi
# pytest_part NAME SECONDS TESTS...: each test's outcome printed as it ends
# (-v, so that a run cut short still names its failures), the counts and
# the failed tests' names as a RESULT line.
pytest_part() {
  local name=$1 limit=$2 parallel=()
  shift 2
  "$python" -c 'import xdist' 2>/dev/null && ((cores > 2)) && parallel=(-n $((cores / 2)))
  part "$name" "$limit" "$python" -m pytest -v -p no:cacheprovider \
    -p no:benchmark -rfEs --tb=short "${parallel[@]}" \
    --junitxml="$work/$name.xml" "$@"
  [[ -e $work/$name.xml ]] &&
    "$python" "$repo/scripts/stack_matrix.py" --result "$name" "$work/$name.xml" |
    sed -n 's/^RESULT //p' | tee -a "$results"
}
# The Python suite on this machine's torch, torchvision, Pillow and numpy
# (about 6 minutes on 16 cores with pytest-xdist).
pytest_part recipe_exact 180 "${recipe_tests[@]}"
pytest_part suite "${STOKER_GPU_SUITE_SECONDS:-500}" "${suite_tests[@]}"
"$python" "$here/summarize.py" "$results" >"$out/summary.md"
cat "$out/summary.md"
echo "== $SECONDS s in all; $(ls /dev/shm | grep -c stoker) stoker segments left in /dev/shm"
exit $failed
