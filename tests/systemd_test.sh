#!/usr/bin/env bash
# The packaged service under a real, booted systemd: the project's own .deb
# packages installed with dpkg -i in a Debian 12 container (systemd-nspawn),
# then what an operator relies on, in order: install and socket activation,
# trainers (C++ and Python) under the unit's full hardening, the watchdog,
# reload, memory containment, journald, stop, uninstall and purge.
#   systemd_test.sh <build dir> <source dir> <make_dataset binary>
# Exits 77 (skipped) with the reason where no container can boot: not root,
# no systemd-nspawn, no cgroup file system (a chroot), no overlayfs, no
# package mirror for the first root.
# STOKER_SYSTEMD_DEBUG=1 keeps a failed container up for 10 minutes (enter
# it with nsenter -t <pid of its systemd> -a).
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
make_dataset=$(realpath "$3")
here=$source/tests/systemd

skip() { echo "SKIPPED: systemd test: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root to boot a container"
command -v systemd-nspawn >/dev/null ||
  skip "systemd-nspawn is not installed (package systemd-container)"
# A chroot (such as a debootstrap root) has /sys without the cgroup file
# systems, and systemd-nspawn cannot start a container there.
case $(stat -fc %T /sys/fs/cgroup 2>/dev/null) in
  tmpfs | cgroup2fs) ;;
  *) skip "no cgroup file system at /sys/fs/cgroup (a chroot?): systemd-nspawn cannot start a container" ;;
esac
scratch=$(mktemp -d "${TMPDIR:-/tmp}/stoker-systemd.XXXXXX")
# shellcheck source=tests/systemd/container.sh
source "$here/container.sh"
cleanup() {
  container_stop
  rm -rf --one-file-system "$scratch"
}
trap cleanup EXIT
started=$SECONDS
step() { echo "== [$((SECONDS - started)) s] $*"; }
fail() {
  echo "systemd test: FAILED: $*"
  if [[ -n ${leader:-} ]]; then
    echo "-- journalctl -u stokerd (last 30):"
    in_container journalctl -u stokerd -u stokerd.socket --no-pager -n 30 || true
  fi
  [[ -n ${STOKER_SYSTEMD_DEBUG:-} ]] && sleep 600
  exit 1
}
# shellcheck source=tests/systemd/checks.sh
source "$here/checks.sh"

step "packages and a trainer built against them"
cpack --config "$build/CPackConfig.cmake" -B "$scratch/pkg" >"$scratch/cpack.log" 2>&1 ||
  fail "cpack: $(tail -5 "$scratch/cpack.log")"
version=$(dpkg-deb -f "$scratch"/pkg/stokerd_*.deb Version)
deb() { echo "$scratch/pkg/$1_${version}_$2.deb"; }
for package in libstoker1:amd64 libstoker-dev:amd64; do
  dpkg-deb -x "$(deb "${package%%:*}" "${package##*:}")" "$scratch/sdk"
done
cmake -S "$source/tests/package_consumer" -B "$scratch/consumer" \
  -DCMAKE_PREFIX_PATH="$scratch/sdk/usr" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/consumer" --target trainer >/dev/null

step "a booted Debian 12 container"
container_root "$(dpkg-deb -f "$(deb stokerd amd64)" Depends)" \
  "$(dpkg-deb -f "$(deb libstoker1 amd64)" Depends)"
container_boot "$container_dir" "$scratch"
systemd_version=$(in_container systemctl --version | head -1)
cgroup_fs=$(in_container stat -fc %T /sys/fs/cgroup)
case $cgroup_fs in
  cgroup2fs) cgroup_version=v2 ;;
  tmpfs) cgroup_version=v1 ;;
  *) fail "/sys/fs/cgroup in the container is $cgroup_fs" ;;
esac
echo "container: $systemd_version; cgroup $cgroup_version"

mkdir -p "$machine/root/debs" "$machine/usr/local/bin"
cp "$(deb stokerd amd64)" "$(deb libstoker1 amd64)" "$(deb python3-stoker all)" \
  "$machine/root/debs/"
cp "$scratch/consumer/trainer" "$here/py_trainer.py" "$machine/usr/local/bin/"

check_install
check_hardened_work
check_watchdog
check_reload
check_memory
check_journal
check_stop
check_purge
step "all checks passed ($systemd_version, cgroup ${cgroup_version})"
