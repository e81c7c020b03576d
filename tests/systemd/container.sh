# A booted Debian 12 container for tests/systemd_test.sh (sourced, not run).
#
#   container_root DEPENDS...   sets $container_dir: a cached root holding a
#                               bare Debian 12 with systemd, python3-torch and
#                               the packages named (a Depends field each);
#                               made once per set of packages, in
#                               $STOKER_CONTAINER_CACHE (/var/cache/stoker-test)
#   container_boot ROOT SCRATCH boots a throwaway overlay of ROOT with
#                               systemd-nspawn; sets $machine (its root
#                               directory, writable) and $leader (the host
#                               pid of its systemd)
#   in_container CMD...         runs CMD inside it, as root, clean environment
#   as_user USER CMD...         the same as USER (with USER's groups)
#   container_stop              powers it off and removes the overlay
#
# A function that cannot provide the container calls `skip REASON` (defined
# by the caller): only a machine where systemd-nspawn cannot work skips.

container_cache=${STOKER_CONTAINER_CACHE:-/var/cache/stoker-test}
# Changes whenever the recipe below changes what the root holds.
container_recipe="bookworm minbase + systemd python3-torch v1"

# The apt mirror this machine uses (deb822 or one-line sources).
container_mirror() {
  local mirror
  mirror=$(grep -hoE '^URIs: *\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '{print $2}' | grep -v security | head -1)
  [[ -n $mirror ]] || mirror=$(grep -hoE '^deb +\S+' /etc/apt/sources.list 2>/dev/null |
    awk '{print $2}' | head -1)
  echo "${mirror:-http://deb.debian.org/debian}"
}

container_unmount_all() {  # container_unmount_all DIR: every mount below DIR
  local mounts
  mounts=$(awk -v dir="$1" '$5 == dir || index($5, dir "/") == 1 {print $5}' \
    /proc/self/mountinfo | sort -r)
  for m in $mounts; do umount -l "$m" 2>/dev/null || true; done
}

# Installs systemd, python3-torch and the dependencies into a bare root.
container_populate() {  # container_populate DIR DEPENDS
  local dir=$1 depends=$2
  if [[ -s /var/cache/fresh-root/minbase.tar ]]; then
    tar -C "$dir" -xf /var/cache/fresh-root/minbase.tar
  else
    command -v debootstrap >/dev/null || return 1
    debootstrap --variant=minbase bookworm "$dir" "$(container_mirror)" \
      >"$dir.debootstrap.log" 2>&1 || { tail -5 "$dir.debootstrap.log"; return 1; }
  fi
  cp /etc/apt/sources.list.d/*.sources "$dir/etc/apt/sources.list.d/" 2>/dev/null &&
    rm -f "$dir/etc/apt/sources.list" || true
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  for m in proc sys dev dev/pts; do mount --bind "/$m" "$dir/$m"; done
  # Packages this machine already downloaded are not downloaded again.
  [[ -d /var/cache/apt/archives ]] &&
    mount --bind /var/cache/apt/archives "$dir/var/cache/apt/archives"
  local status=0
  chroot "$dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive /bin/sh -c "apt-get update -qq &&
      apt-get satisfy -y -qq --no-install-recommends \
        'systemd, systemd-sysv, python3, python3-torch, $depends'" \
    >"$dir.apt.log" 2>&1 || status=$?
  container_unmount_all "$dir"
  [[ $status -eq 0 ]] || { grep -E '^E:' "$dir.apt.log" | head -5; return 1; }
  rm -f "$dir/etc/machine-id" "$dir.apt.log"
  echo stoker-test >"$dir/etc/hostname"
}

container_root() {  # container_root DEPENDS...
  local depends key root
  depends=$(printf '%s, ' "$@")
  depends=${depends%, }
  key=$(printf '%s\n' "$container_recipe" "$depends" |
    cat - /etc/apt/sources.list.d/*.sources 2>/dev/null | sha256sum | cut -c1-16)
  root=$container_cache/root-$key
  mkdir -p "$container_cache"
  exec {lock}>"$container_cache/lock"
  flock "$lock"
  if [[ ! -d $root ]]; then
    echo "systemd test: making the container root $root (once; about a minute)" >&2
    rm -rf --one-file-system "$root.new" "$root.new".*.log
    mkdir -p "$root.new"
    if ! container_populate "$root.new" "$depends" >&2; then
      container_unmount_all "$root.new"
      rm -rf --one-file-system "$root.new"
      flock -u "$lock"
      skip "cannot install systemd and the packages' dependencies into a Debian 12 root (no package mirror reachable?)"
    fi
    mv "$root.new" "$root"
  fi
  flock -u "$lock"
  container_dir=$root
}

container_boot() {  # container_boot ROOT SCRATCH
  local root=$1 scratch=$2
  mkdir -p "$scratch/upper" "$scratch/work" "$scratch/machine"
  mount -t overlay overlay -o \
    "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" \
    "$scratch/machine" || skip "cannot mount an overlay file system here"
  machine=$scratch/machine
  container_log=$scratch/boot.log
  systemd-nspawn --register=no --keep-unit --quiet --console=pipe -b \
    -D "$machine" -M "stoker-test-$$" </dev/null >"$container_log" 2>&1 &
  container_nspawn=$!
  leader=
  for _ in $(seq 200); do
    kill -0 "$container_nspawn" 2>/dev/null || break
    leader=$(pgrep -P "$container_nspawn" -x systemd | head -1 || true)
    [[ -n $leader ]] && break
    sleep 0.1
  done
  [[ -n $leader ]] ||
    skip "systemd-nspawn cannot boot a container here: $(tail -3 "$container_log" | tr '\n' ' ')"
  local state deadline=$((SECONDS + 90))
  # Until systemd listens, systemctl cannot connect; then --wait waits for
  # the boot to finish.
  while ((SECONDS < deadline)); do
    state=$(timeout 90 nsenter -t "$leader" -a systemctl is-system-running --wait 2>&1) || true
    [[ $state == running || $state == degraded ]] && break
    kill -0 "$container_nspawn" 2>/dev/null || break
    sleep 0.2
  done
  [[ $state == running || $state == degraded ]] ||
    skip "the container's systemd did not come up (state '$state'): $(tail -3 "$container_log" | tr '\n' ' ')"
}

in_container() {
  nsenter -t "$leader" -a /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 "$@"
}

as_user() {  # as_user USER CMD...
  local user=$1
  shift
  in_container runuser -u "$user" -- /usr/bin/env HOME="/home/$user" "$@"
}

container_stop() {
  if [[ -n ${container_nspawn:-} ]] && kill -0 "$container_nspawn" 2>/dev/null; then
    # SIGTERM: nspawn asks the container's systemd to power off.
    kill -TERM "$container_nspawn" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "$container_nspawn" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$container_nspawn" 2>/dev/null || true
    wait "$container_nspawn" 2>/dev/null || true
  fi
  container_nspawn=
  [[ -n ${machine:-} ]] && container_unmount_all "$machine"
  return 0
}
