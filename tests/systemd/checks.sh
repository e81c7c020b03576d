# The checks of tests/systemd_test.sh, one function per part of the issue
# an operator relies on (sourced; uses step, fail, in_container, as_user and
# $machine, $scratch, $make_dataset, $here from it).

target=unix:///run/stoker/stoker.sock
datasets=/var/lib/stoker/datasets
photos=$datasets/photos  # 3 classes of 10 JPEGs and a class of 5 other formats
photo_samples=35
photo_classes="10,10,10,5"

unit() { in_container systemctl show stokerd -p "$1" --value; }
segments() { in_container sh -c 'ls /dev/shm | grep "^stoker-" || true'; }
cursor() { in_container journalctl --show-cursor -n 0 -q | sed -n 's/^-- cursor: //p'; }
# From the entry at CURSOR on, inclusive: journalctl 252's --after-cursor
# with a filter skips the first matching entry when the cursor's own entry
# does not match.
journal_since() {  # journal_since CURSOR [journalctl args]: stokerd's entries
  local from=$1
  shift
  in_container journalctl -u stokerd --no-pager -q --cursor="$from" "$@"
}
journal_has() {  # journal_has CURSOR PATTERN [journalctl args]
  local after=$1 pattern=$2
  shift 2
  local entries  # read whole: `journalctl | grep -q` fails by SIGPIPE under pipefail
  entries=$(journal_since "$after" "$@")
  grep -q -- "$pattern" <<<"$entries"
}
replaced() {  # replaced PID: another stokerd than PID is active
  [[ $(unit MainPID) != "$1" && $(in_container systemctl is-active stokerd) == active ]]
}
wait_until() {  # wait_until SECONDS WHAT CMD...: CMD succeeds within SECONDS
  local limit=$1 what=$2
  shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "$what within ${limit}s"
    sleep 0.2
  done
}
cpp_trainer() {  # cpp_trainer DATASET EPOCHS STEP_MS RECONNECT_MS
  as_user alice /usr/local/bin/trainer "$target" "$@"
}
py_trainer() {  # py_trainer DATASET EPOCHS STEP_S RECONNECT_S
  as_user alice python3 /usr/local/bin/py_trainer.py "$@"
}
# The C++ trainer's log holds every epoch exactly: batches 0, 1, 2... in
# order, and each sample once per epoch.
check_exact() {  # check_exact LOG EPOCHS
  python3 - "$1" "$2" "$photo_samples" <<'PY' || fail "trainer log $1 is not exact"
import sys
log, epochs, samples = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = open(log).read().split("\n")
assert lines[-2] == "end", f"the trainer did not finish: {lines[-3:]}"
seen = {}
for line in lines:
    if line.startswith("batch "):
        epoch, index, *indices = map(int, line.split()[1:])
        seen.setdefault(epoch, []).append((index, indices))
assert sorted(seen) == list(range(epochs)), f"epochs {sorted(seen)}"
for epoch, batches in seen.items():
    assert [b[0] for b in batches] == list(range(len(batches))), \
        f"epoch {epoch}: batch order {[b[0] for b in batches]}"
    got = sorted(i for b in batches for i in b[1])
    assert got == list(range(samples)), f"epoch {epoch}: samples {got}"
print(f"{log}: {epochs} epochs exact, {sum(len(b) for b in seen.values())} batches")
PY
}
# drop_in NAME LINE: the drop-in stokerd.service.d/NAME.conf holds [Service]
# and LINE; drop_in NAME: it is removed. systemd reloads either way.
drop_in() {
  local file=/etc/systemd/system/stokerd.service.d/$1.conf
  if [[ -n ${2:-} ]]; then
    in_container mkdir -p "${file%/*}"
    printf '[Service]\n%s\n' "$2" >"$machine$file"
  else
    rm "$machine$file"
  fi
  in_container systemctl daemon-reload
}
# Both trainers of start_trainers NAME finished with exactly the batches of
# an uninterrupted run, and no ring is left.
trainers_exact() {  # trainers_exact NAME
  wait_done "$cpp_pid" 120 "the C++ trainer"
  wait_done "$py_pid" 120 "the Python trainer"
  check_exact "$scratch/cpp_$1.log" 3
  diff <(grep -v '^len' "$scratch/py_ref.log") <(grep -v '^len' "$scratch/py_$1.log") ||
    fail "the Python trainer's epochs differ from an uninterrupted run"
  echo "Python: the same batches, labels and pixels as an uninterrupted run"
  [[ -z $(segments) ]] || fail "segments left: $(segments)"
}
wait_done() {  # wait_done PID SECONDS NAME
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || { kill "$1"; fail "$3 did not finish within $2 s"; }
    sleep 0.2
  done
  wait "$1" || true
}

make_datasets() {
  local root=$machine$datasets
  "$make_dataset" --out="$root/photos" --classes=3 --per_class=10 >/dev/null
  # A class of every other format stokerd decodes, converted by Pillow.
  /usr/bin/python3 - "$root/photos" <<'PY'
import os, sys
from PIL import Image
root = sys.argv[1]
first = sorted(os.listdir(root))[0]
files = sorted(os.listdir(os.path.join(root, first)))
os.makedirs(os.path.join(root, "zz_formats"))
for name, ext in zip(files, ["png", "webp", "tiff", "bmp", "ppm"]):
    Image.open(os.path.join(root, first, name)).save(
        os.path.join(root, "zz_formats", f"{name}.{ext}"))
PY
  # The same images as two tar shards (WebDataset layout).
  mkdir -p "$root/shards"
  /usr/bin/python3 - "$root/photos" "$root/shards" <<'PY'
import io, os, sys, tarfile
photos, out = sys.argv[1], sys.argv[2]
rows = [(label, c, f) for label, c in enumerate(sorted(os.listdir(photos))[:3])
        for f in sorted(os.listdir(os.path.join(photos, c)))]
for shard in range(2):
    with tarfile.open(os.path.join(out, f"photos-{shard}.tar"), "w") as tar:
        for n, (label, c, f) in enumerate(rows[shard::2]):
            key = f"s{shard}_{n:04d}"
            tar.add(os.path.join(photos, c, f), arcname=f"{key}.jpg")
            data = str(label).encode()
            info = tarfile.TarInfo(f"{key}.cls")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
PY
  # Outside the dataset roots.
  mkdir -p "$machine/srv/outside"
  cp -r "$root/photos" "$machine/srv/outside/photos"
  # Files that fail to decode, one named to forge a journal entry.
  mkdir -p "$root/bad/cls"
  cp "$root/photos/$(ls "$root/photos" | head -1)"/*_000[0-2]* "$root/bad/cls/"
  echo "not an image" >"$root/bad/cls/broken.jpg"
  echo "not an image either" >"$root/bad/cls/"$'evil\n<0>forged entry.jpg'
  # The trainer's own files, readable by nobody else: stokerd opens them
  # with alice's permissions.
  in_container chown -R alice:alice "$datasets/photos" "$datasets/shards" \
    "$datasets/bad" /srv/outside
  in_container chmod -R go-rwx "$datasets/photos" "$datasets/shards" "$datasets/bad"
}

check_install() {
  step "1. dpkg -i; user, group and runtime directory; socket activation; READY"
  in_container dpkg -i "/root/debs/libstoker1_${version}_amd64.deb" \
    "/root/debs/stokerd_${version}_amd64.deb" "/root/debs/python3-stoker_${version}_all.deb" \
    >"$scratch/dpkg-install.log" 2>&1 ||
    fail "dpkg -i: $(tail -5 "$scratch/dpkg-install.log")"
  [[ $(in_container getent passwd stoker) == *:/nonexistent:/usr/sbin/nologin ]] ||
    fail "no system user stoker"
  in_container getent group stoker >/dev/null || fail "no group stoker"
  [[ $(in_container stat -c '%U %G %a' /run/stoker) == "stoker stoker 755" ]] ||
    fail "/run/stoker: $(in_container stat -c '%U %G %a' /run/stoker)"
  # The package enabled and started both units. Begin from the socket alone,
  # as an operator who wants stokerd started by the first trainer.
  in_container systemctl disable -q --now stokerd.service stokerd.socket
  in_container systemctl enable -q --now stokerd.socket
  [[ $(in_container systemctl is-active stokerd.socket) == active ]] ||
    fail "stokerd.socket is not active"
  [[ $(in_container systemctl is-active stokerd.service || true) == inactive ]] ||
    fail "stokerd.service runs before any trainer connected"
  in_container test -S /run/stoker/stoker.sock || fail "no socket after enable --now"
  in_container test -S /run/stoker/stoker.sock.ring || fail "no ring socket"
  in_container useradd -m -s /bin/bash -G stoker alice
  in_container useradd -m -s /bin/bash mallory
  make_datasets

  local status
  status=$(as_user alice stokerctl status) || fail "first connection: $status"
  grep -q SERVING <<<"$status" || fail "stokerctl status: $status"
  [[ $(in_container systemctl is-active stokerd.service) == active ]] ||
    fail "the first connection did not start stokerd.service"
  # READY=1 (systemd's "Started") comes after stokerd listens and serves.
  in_container journalctl -u stokerd -o short-monotonic --no-pager -q |
    python3 -c '
import re, sys
listening = started = None
for line in sys.stdin:
    t = float(re.match(r"\[\s*([0-9.]+)\]", line).group(1))
    if "listening on /run/stoker/stoker.sock" in line and listening is None:
        listening = t
    if "Started stokerd.service" in line and started is None:
        started = t
assert listening is not None and started is not None, (listening, started)
assert started >= listening, f"READY at {started} before serving at {listening}"
print(f"READY {1000 * (started - listening):.1f} ms after stokerd listened")
' || fail "READY before serving"
  status=$(in_container systemctl status stokerd --no-pager) || true
  grep -q 'Active: active (running)' <<<"$status" || fail "systemctl status: $status"
  grep -q 'TriggeredBy: .*stokerd.socket' <<<"$status" || fail "not socket-activated: $status"
  grep -q 'Status: "serving /run/stoker/stoker.sock' <<<"$status" ||
    fail "no status line: $status"
  grep -E 'Active:|Status:' <<<"$status"
  local refused
  refused=$(as_user mallory stokerctl status 2>&1) && fail "mallory connected: $refused"
  grep -q 'not in group stoker' <<<"$refused" || fail "mallory was told: $refused"
}

check_hardened_work() {
  step "2. trainers read datasets under the unit's hardening"
  local pid
  pid=$(unit MainPID)
  in_container grep -E '^(NoNewPrivs|Seccomp|CapEff):' "/proc/$pid/status" | tr '\n' ' '
  echo
  [[ $(in_container awk '/^Seccomp:/ {print $2}' "/proc/$pid/status") == 2 ]] ||
    fail "stokerd runs without its system call filter"
  cpp_trainer "$photos" 1 0 0 >"$scratch/cpp_ref.log" || fail "C++ trainer: $(tail -2 "$scratch/cpp_ref.log")"
  check_exact "$scratch/cpp_ref.log" 1
  py_trainer "$photos" 2 0 0 >"$scratch/py_ref.log" || fail "Python trainer: $(tail -2 "$scratch/py_ref.log")"
  python3 - "$scratch/py_ref.log" "$photo_classes" <<'PY' || fail "Python trainer's epochs"
import collections, sys
lines = open(sys.argv[1]).read().split("\n")
classes = list(map(int, sys.argv[2].split(",")))
assert lines[0] == f"len {(sum(classes) + 3) // 4}", lines[0]
assert lines[-2] == "end", lines[-3:]
for line in lines[1:-2]:
    labels = list(map(int, line.split()[2].split(",")))
    counts = collections.Counter(labels)
    assert [counts[c] for c in range(len(classes))] == classes, counts
print(f"Python: {len(lines) - 3} epochs of {sum(classes)} samples, every class complete")
PY
  local bench
  bench=$(as_user alice stokerctl bench "$datasets/shards/photos-{0..1}.tar" \
    --batches=3 --batch_size=8 --size=64 --pipeline=resize 2>&1) ||
    fail "stokerctl bench on tar shards: $bench"
  local refused
  refused=$(cpp_trainer /srv/outside/photos 1 0 0) && fail "outside the roots: $refused"
  grep -q 'PERMISSION_DENIED.*outside the dataset roots' <<<"$refused" ||
    fail "outside the roots, the trainer was told: $refused"
  [[ $(unit MainPID) == "$pid" && $(unit NRestarts) == 0 ]] ||
    fail "stokerd died while decoding (pid $pid -> $(unit MainPID)): a forbidden system call?"
  [[ -z $(segments) ]] || fail "segments left: $(segments)"
}

# Starts both trainers in the background, stepping slowly; sets cpp_pid and
# py_pid, logs in $scratch/{cpp,py}_$1.log.
# Python ($py_epochs, default 2) and C++ ($cpp_epochs, default 3) take 150 ms
# a batch: both are mid-epoch when this returns.
start_trainers() {  # start_trainers NAME RECONNECT_MS
  py_trainer "$photos" "${py_epochs:-2}" 0.15 "$(($2 / 1000))" >"$scratch/py_$1.log" 2>&1 &
  py_pid=$!
  wait_until 60 "the Python trainer did not start" grep -q '^len' "$scratch/py_$1.log"
  cpp_trainer "$photos" "${cpp_epochs:-3}" 150 "$2" >"$scratch/cpp_$1.log" 2>&1 &
  cpp_pid=$!
  wait_until 60 "the C++ trainer did not start" \
    grep -q '^batch 0 3 ' "$scratch/cpp_$1.log"
}

check_watchdog() {
  step "3a. the watchdog restarts a stopped stokerd; trainers resume exactly"
  drop_in watchdog WatchdogSec=5s
  in_container systemctl restart stokerd
  start_trainers watchdog 60000
  local old from t0 elapsed
  old=$(unit MainPID)
  from=$(cursor)
  t0=$(date +%s.%N)
  in_container sh -c "kill -STOP $old"
  wait_until 40 "no restart after SIGSTOP" replaced "$old"
  elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  echo "stopped stokerd (pid $old) replaced in ${elapsed}s (WatchdogSec=5s, RestartSec=1s)"
  awk -v e="$elapsed" 'BEGIN {exit !(e < 12)}' || fail "restart took ${elapsed}s"
  wait_until 10 "no watchdog timeout logged" journal_has "$from" 'Watchdog timeout'
  # The dead daemon's rings are gone too: none is left.
  trainers_exact watchdog
  drop_in watchdog
}

check_reload() {
  step "3b. systemctl reload applies a limit, refuses a bad file without stopping"
  local conf=/etc/stoker/stokerd.conf pid from out
  pid=$(unit MainPID)
  from=$(cursor)
  in_container sed -i 's/^max_jobs_per_user: .*/max_jobs_per_user: 1/' "$conf"
  in_container systemctl reload stokerd || fail "reload of a good file failed"
  wait_until 10 "the change is not logged" journal_has "$from" 'reload: max_jobs_per_user: 16 -> 1'
  out=$(as_user alice python3 - "$photos" <<'PY'
import sys, stoker
spec = {"dataset": {"path": sys.argv[1]}, "batch_size": 4, "slots": 2,
        "pipeline": [{"resize": {"height": 8, "width": 8}}]}
with stoker.Client() as client:
    first = client.create_job(spec)
    try:
        client.create_job(spec)
        print("second created")
    except stoker.ResourceExhausted as error:
        print("second refused:", error)
    client.delete_job(first["id"])
PY
) || fail "jobs after reload: $out"
  grep -q 'second refused' <<<"$out" || fail "max_jobs_per_user=1 not applied: $out"
  from=$(cursor)
  echo 'shm_budget: "16Q"' >>"$machine$conf"
  out=$(in_container systemctl reload stokerd 2>&1) && fail "a bad file was accepted"
  wait_until 10 "the refusal does not say why" journal_has "$from" "'16Q' is not a byte size"
  [[ $(unit MainPID) == "$pid" && $(in_container systemctl is-active stokerd) == active ]] ||
    fail "a refused reload stopped stokerd"
  as_user alice stokerctl status >/dev/null || fail "stokerd does not answer after a refused reload"
  out=$(journal_since "$from" -o cat)
  echo "refused: $(grep -m1 16Q <<<"$out")"
  in_container sed -i -e '/^shm_budget: "16Q"/d' \
    -e 's/^max_jobs_per_user: .*/max_jobs_per_user: 16/' "$conf"
  in_container systemctl reload stokerd || fail "reload back failed"
}

# On cgroup v1 (a hybrid host), systemd applies MemoryMax= as the memory
# controller's memory.limit_in_bytes. systemd-nspawn mounts the v1
# controllers read-only inside the container, as no v1 host's systemd has
# them; the test mounts the memory one writable and re-executes systemd, which
# is what PID 1 of a v1 host sees. On cgroup v2, MemoryMax= is memory.max.
memory_limit_file() {
  if [[ $cgroup_version == v2 ]]; then
    echo /sys/fs/cgroup/system.slice/stokerd.service/memory.max
  else
    echo /sys/fs/cgroup/memory/system.slice/stokerd.service/memory.limit_in_bytes
  fi
}

check_memory() {
  step "4. MemoryMax: a job past what it leaves is refused; stokerd and its trainers go on"
  if [[ $cgroup_version == v1 ]]; then
    in_container mount -o remount,bind,rw /sys/fs/cgroup/memory ||
      fail "cannot make the memory controller writable"
    in_container systemctl daemon-reexec
    wait_until 30 "systemd did not come back after daemon-reexec" \
      nsenter -t "$leader" -a systemctl show -p Version
  fi
  drop_in memory MemoryMax=150M
  in_container systemctl restart stokerd
  local applied
  applied=$(in_container cat "$(memory_limit_file)") ||
    fail "MemoryMax= is not applied ($cgroup_version)"
  [[ $applied == $((150 << 20)) ]] || fail "MemoryMax=150M gave $(memory_limit_file) = $applied"
  echo "MemoryMax=150M is $(memory_limit_file) = $applied"
  start_trainers memory 60000
  local old from out
  old=$(unit MainPID)
  from=$(cursor)
  # A job whose ring (64 x 224 x 224 x 3 bytes x 24 slots = 231 MB) would be
  # charged to stokerd past its limit: stokerd reads the limit (memory.max or
  # memory.limit_in_bytes) and refuses the job rather than being killed.
  out=$(as_user alice python3 - "$photos" <<'PY'
import sys, stoker
with stoker.Client() as client:
    try:
        client.create_job({"dataset": {"path": sys.argv[1]}, "batch_size": 64,
                           "slots": 24, "epochs": 0,
                           "pipeline": [{"resize": {"height": 224, "width": 224}}]})
        print("created")
    except stoker.StokerError as error:
        print("create:", type(error).__name__, error)
PY
) || true
  grep -q "ResourceExhausted.*memory limit of stokerd's cgroup" <<<"$out" ||
    fail "the job past MemoryMax was not refused naming the cgroup: $out"
  echo "the job past it: $out"
  sleep 2
  [[ $(unit MainPID) == "$old" ]] || fail "stokerd was replaced: $(journal_since "$from" -o cat)"
  ! journal_has "$from" 'status=9/KILL' || fail "stokerd was killed for memory"
  trainers_exact memory
  drop_in memory
  in_container systemctl restart stokerd
}

check_journal() {
  step "5. journald: levels, nothing per batch, no forged entries"
  local from warnings forged all
  from=$(cursor)
  cpp_trainer "$photos" 3 0 0 >"$scratch/cpp_quiet.log" || fail "C++ trainer failed"
  all=$(journal_since "$from" -o cat _COMM=stokerd)
  # The job's life (created, finished, deleted), nothing per batch.
  [[ $(grep -c . <<<"$all") -le 3 ]] || fail "stokerd logged during 27 batches: $all"
  echo "a job of 27 batches: $(grep -c . <<<"$all") stokerd entries"
  from=$(cursor)
  as_user alice python3 - "$datasets/bad" <<'PY' || fail "reading the bad dataset"
import sys, stoker
loader = stoker.DataLoader(sys.argv[1], batch_size=2,
                           transform=[{"resize": {"height": 8, "width": 8}}],
                           name="evil\n<0>forged consumer")
for images, labels in loader:
    pass
loader.close()
PY
  wait_until 10 "the decode failures are not in the journal at warning" \
    journal_has "$from" 'forged entry.jpg' -p warning
  wait_until 10 "the decode failures are not in the journal at warning" \
    journal_has "$from" broken.jpg -p warning
  warnings=$(journal_since "$from" -p warning -o cat)
  echo "$warnings"
  grep -q 'broken.jpg' <<<"$warnings" || fail "the decode failure is not a warning"
  grep -qF 'evil\n<0>forged entry.jpg' <<<"$warnings" || fail "the file name is not escaped"
  forged=$(journal_since "$from" -p 0..3 -o cat)
  [[ -z $forged ]] || fail "entries at err or above: $forged"
  all=$(journal_since "$from" -o cat)
  ! grep -E '^(<[0-9]>)?forged' <<<"$all" || fail "a client forged an entry"
}

check_stop() {
  step "3c. systemctl stop drains: trainers get UNAVAILABLE, nothing left"
  # Trainers with epochs enough to be running when stokerd stops.
  py_epochs=20 cpp_epochs=20 start_trainers stop 2000
  in_container systemctl stop stokerd.socket stokerd.service
  wait_done "$cpp_pid" 60 "the C++ trainer"
  wait_done "$py_pid" 60 "the Python trainer"
  tail -1 "$scratch/cpp_stop.log"
  tail -1 "$scratch/py_stop.log" | cut -c1-200
  grep -q '^next UNAVAILABLE' "$scratch/cpp_stop.log" || fail "C++: $(tail -1 "$scratch/cpp_stop.log")"
  grep -q '^error Unavailable' "$scratch/py_stop.log" || fail "Python: $(tail -1 "$scratch/py_stop.log")"
  [[ -z $(segments) ]] || fail "segments left: $(segments)"
  in_container test ! -e /run/stoker/stoker.sock || fail "the socket is left"
}

check_purge() {
  step "6. dpkg -r and dpkg -P leave nothing"
  in_container rm -rf "$datasets/photos" "$datasets/shards" "$datasets/bad"
  in_container dpkg -r python3-stoker stokerd libstoker1 >/dev/null 2>&1 || fail "dpkg -r"
  # Removed, stokerd keeps its conffile, and a package with maintainer
  # scripts its record, until purged.
  local state
  state=$(in_container dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' \
    python3-stoker stokerd libstoker1 2>&1 || true)
  grep -qx 'rc  stokerd' <<<"$state" || fail "after dpkg -r: $state"
  in_container dpkg -P $(awk '$1 == "rc" {print $2}' <<<"$state") >"$scratch/purge.log" 2>&1 ||
    fail "dpkg -P: $(cat "$scratch/purge.log")"
  state=$(in_container dpkg -l 2>&1)
  ! grep -E '^.. +(python3-stoker|stokerd|libstoker1) ' <<<"$state" ||
    fail "packages left in dpkg's database"
  local left
  left=$(in_container sh -c 'ls -d /lib/systemd/system/stokerd* /etc/systemd/system/*stokerd* \
    /etc/systemd/system/*/*stokerd* /etc/stoker /run/stoker /var/lib/stoker /usr/sbin/stokerd \
    /dev/shm/stoker-* 2>/dev/null' || true)
  [[ -z $left ]] || fail "left after purge: $left"
  in_container getent passwd stoker && fail "the user stoker is left"
  in_container getent group stoker && fail "the group stoker is left"
  [[ -z $(in_container systemctl list-units --all --no-legend 'stokerd*') ]] ||
    fail "units still loaded: $(in_container systemctl list-units --all 'stokerd*')"
  grep -i warning "$scratch/purge.log" && fail "dpkg warned"
  echo "nothing left: units, configuration, user, group, sockets, segments"
}
