#!/usr/bin/env bash
# The main job: installs dependencies, builds, generates a sample dataset,
# starts stokerd on a temporary socket, trains the example trainer on it for
# two epochs (printing images/s and per-epoch sample counts) and stops the
# daemon cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Only what the demo runs (the test command builds the rest).
STOKER_TARGETS="stokerd example_trainer make_dataset" scripts/build.sh
build=${STOKER_BUILD_DIR:-build}

work=$(mktemp -d /tmp/stoker-demo.XXXXXX)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid"; wait "$daemon_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== generating a sample ImageFolder in $work/data"
"$build/bench/make_dataset" --out="$work/data" --classes=8 --per_class=64

socket="$work/stoker.sock"
echo "== starting stokerd on $socket"
# The example trainer needs almost no CPU, so the daemon gets every core
# (its default, for real trainers, is one per core but one).
"$build/daemon/stokerd" --config= --socket="$socket" --workers="$(nproc)" &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
[[ -S $socket ]] || { echo "stokerd did not start" >&2; exit 1; }

echo "== training for 2 epochs"
"$build/client/example_trainer" --target="$socket" \
  --data="$work/data" --epochs=2 --batch_size=32 --size=224

echo "== stopping stokerd"
kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=
# This daemon's rings only (other daemons on the machine have their own).
prefix=$("$build/daemon/stokerd" --config= --socket="$socket" --check_config |
  sed -n 's|^# rings: /dev/shm/\(.*\)\*$|\1|p')
[[ -n $prefix ]] || { echo "stokerd --check_config named no rings" >&2; exit 1; }
left=$(ls /dev/shm | grep -c "^$prefix" || true)
echo "stokerd stopped cleanly; its segments left in /dev/shm ($prefix*): $left"
