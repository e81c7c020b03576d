#!/usr/bin/env bash
# Installs the Debian 12 packages stoker needs to build, test and run its
# demo. Idempotent: prints nothing and changes nothing when all are there.
set -euo pipefail

packages=(
  cmake ninja-build pkg-config g++ gcc
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libboost-dev libspdlog-dev
  libjpeg62-turbo-dev libturbojpeg0-dev libyuv-dev libspng-dev
  libwebp-dev libtiff-dev libsimdjson-dev
  libgtest-dev clang clang-format libclang-rt-14-dev
  libcivetweb-dev systemd
  # The systemd test boots a Debian 12 container (systemd-nspawn) made with
  # debootstrap when no cached root is at hand.
  systemd-container debootstrap
  # Packaging: cpack's dependency scan needs `file` and dpkg-shlibdeps
  # (dpkg-dev); help2man makes the man pages; lintian checks the packages.
  dpkg-dev file help2man lintian
  # The Python package's tests: Debian's torch and torchvision, pytest,
  # venv for the offline pip install, and flake8 (Style.PythonLint).
  python3 python3-torch python3-torchvision python3-pytest python3-venv
  python3-flake8
  # The GPU benchmark (bench/gpu): patchelf makes its bundle, psutil samples
  # CPU and memory in its runs (ctest runs it small, on the CPU).
  patchelf python3-psutil
  # Remote shards: libcurl (S3 and HTTP(S) fetches). Their tests start real
  # servers: nginx (with a certificate openssl makes), and s3rver (npm, on
  # Debian's nodejs; installed below); curl puts objects into s3rver,
  # botocore checks the daemon's signatures.
  libcurl4-openssl-dev nginx curl openssl nodejs npm python3-botocore
)

missing=()
for package in "${packages[@]}"; do
  # A node.js installed otherwise brings its own npm.
  [[ $package == npm ]] && command -v npm >/dev/null && continue
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  sudo=()
  [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # The services packages bring (nginx's web server) are not started: the
  # tests start servers of their own. A policy-rc.d says so for the length
  # of the install, unless the machine has its own.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts\nexit 101\n' |
      "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod 755 "$policy"
    trap '"${sudo[@]}" rm -f "$policy"' EXIT
  fi
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
  # Nor at boot.
  if [[ " ${missing[*]} " == *" nginx "* ]] && command -v systemctl >/dev/null; then
    "${sudo[@]}" systemctl disable --quiet nginx 2>/dev/null || true
  fi
fi

# The S3-compatible server the remote-shard tests start, exactly as
# tests/remote/package-lock.json pins it (every package's sha512), into
# tests/remote/node_modules.
remote_tests="$(cd "$(dirname "$0")/.." && pwd)/tests/remote"
if [[ ! -f "$remote_tests/node_modules/s3rver/bin/s3rver.js" ]]; then
  echo "install-deps: installing s3rver for the remote-shard tests"
  npm_ci=(npm ci --prefix "$remote_tests" --omit=dev --no-audit --no-fund
          --loglevel=error)
  npm_log=$(mktemp)
  if ! "${npm_ci[@]}" >/dev/null 2>"$npm_log"; then
    if grep -qi "certificate" "$npm_log"; then
      # Behind a TLS-intercepting proxy whose certificate this machine does
      # not trust: fetch without checking the connection; each package is
      # still checked against its sha512 in the lock file.
      echo "install-deps: npm cannot verify the registry's certificate;" \
           "relying on package-lock.json's hashes"
      "${npm_ci[@]}" --strict-ssl=false >/dev/null
    else
      cat "$npm_log" >&2
      rm -f "$npm_log"
      exit 1
    fi
  fi
  rm -f "$npm_log"
fi
