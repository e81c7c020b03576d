#!/usr/bin/env bash
# The systemd units and snippets under deploy/, checked by systemd's own
# tools: `systemd-analyze verify` (no warnings at all), the hardening score
# of `systemd-analyze security`, and systemd-sysusers / systemd-tmpfiles run
# against a scratch root.
#   deploy_test.sh <stokerd binary> <deploy dir>
set -euo pipefail
stokerd=$1
deploy=$2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/stoker-deploy.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The unit names /usr/sbin/stokerd; verify checks the program exists, so
# point it at the one just built.
sed "s|/usr/sbin/stokerd|$stokerd|" "$deploy/stokerd.service" \
  >"$scratch/stokerd.service"
cp "$deploy/stokerd.socket" "$scratch/"
output=$(systemd-analyze verify --man=no "$scratch/stokerd.service" \
  "$scratch/stokerd.socket" 2>&1)
if [[ -n $output ]]; then
  echo "systemd-analyze verify complained:"; echo "$output"; exit 1
fi

# Exposure 0 (locked down) to 10 (unprotected); the threshold is in tenths.
if ! systemd-analyze security --offline=yes --threshold=30 \
    "$scratch/stokerd.service" >"$scratch/security.txt" 2>&1; then
  echo "hardening weaker than expected:"; tail -3 "$scratch/security.txt"
  exit 1
fi
grep -E "Overall exposure level" "$scratch/security.txt"

root=$scratch/root
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$deploy/sysusers.d/stoker.conf"
grep -E '^stoker:x:[0-9]+:[0-9]+:[^:]*:/nonexistent:/usr/sbin/nologin$' \
  "$root/etc/passwd"
grep -E '^stoker:x:[0-9]+:' "$root/etc/group"
systemd-tmpfiles --root="$root" --create "$deploy/tmpfiles.d/stoker.conf"
uid=$(grep '^stoker:' "$root/etc/passwd" | cut -d: -f3)
[[ $(stat -c '%a %u' "$root/run/stoker") == "755 $uid" ]] ||
  { echo "/run/stoker: $(stat -c '%a %u' "$root/run/stoker")"; exit 1; }
echo "deploy units OK"
