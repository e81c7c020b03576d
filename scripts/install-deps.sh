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
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
[[ $(id -u) -ne 0 ]] && sudo=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
  >/dev/null
