#!/usr/bin/env bash
# Gathers everything bench/gpu/run.sh needs on a GPU machine that has
# Python, torch and torchvision but no stoker, no gRPC and no compiler:
#
#   OUT/bin/NAME        a wrapper per program, which runs it through the
#                       bundled dynamic loader on the bundled libraries, so
#                       that the host's own C and C++ libraries play no part
#   OUT/libexec/NAME    the programs, stripped
#   OUT/lib/            every shared library they load (ldd), but the C and
#                       C++ runtimes; each with RUNPATH $ORIGIN
#   OUT/sys/            the C and C++ runtimes and the loader, for bin/ only
#   OUT/python/stoker/  the Python package, with libstoker.so.1 in _lib/
#                       finding its libraries in OUT/lib (RUNPATH), so that
#                       a Python process loads the host's libstdc++ (the one
#                       torch needs) and the bundle's gRPC
#
#   bench/gpu/bundle.sh [OUT]        (default: .gpu-bundle, ignored by git)
#
# Builds the needed targets in ${STOKER_BUILD_DIR:-build} first; needs
# patchelf (installed through apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${STOKER_BUILD_DIR:-build}
out=${1:-.gpu-bundle}
limit_mb=60

programs=(daemon/stokerd client/stokerctl bench/make_dataset bench/bench_e2e
          tests/cuda_tests tests/dump_batches tests/augment_tool
          tests/pillow_resample_tool tests/color_jitter_tool)
# The C and C++ runtimes: a Python process must use the host's (torch needs
# its libstdc++), so they stay out of lib/.
runtime_re='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'

if ! command -v patchelf >/dev/null; then
  sudo=(); [[ $(id -u) -ne 0 ]] && sudo=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq patchelf \
    >/dev/null
fi
[[ -d $build ]] || scripts/build.sh
targets=(stoker_python stoker_shared)
for p in "${programs[@]}"; do targets+=("$(basename "$p")"); done
cmake --build "$build" --target "${targets[@]}"

rm -rf "$out"
mkdir -p "$out"/{bin,libexec,lib,sys,python/stoker/_lib}
libstoker=$(readlink -f "$build/client/libstoker.so.1")

# Every library any of them loads, by soname.
declare -A seen=()
for file in "${programs[@]/#/$build/}" "$libstoker"; do
  while read -r name path; do
    [[ -n $path && -e $path ]] || continue
    [[ -n ${seen[$name]:-} ]] && continue
    seen[$name]=1
    if [[ $name =~ $runtime_re ]]; then
      cp -L "$path" "$out/sys/$name"
    else
      cp -L "$path" "$out/lib/$name"
      strip --strip-unneeded "$out/lib/$name" 2>/dev/null || true
      patchelf --set-rpath '$ORIGIN' "$out/lib/$name"
    fi
  done < <(ldd "$file" | awk '$2 == "=>" {print $1, $3} $1 ~ /^\// {n=$1; sub(/.*\//, "", n); print n, $1}')
done
[[ -e $out/sys/ld-linux-x86-64.so.2 ]] || { echo "bundle: no loader found" >&2; exit 1; }

for p in "${programs[@]}"; do
  name=$(basename "$p")
  strip -o "$out/libexec/$name" "$build/$p"
  cat >"$out/bin/$name" <<EOF
#!/bin/sh
# $name from the bundle, on the bundle's loader and libraries; the host's
# LD_LIBRARY_PATH after them (where the GPU driver's libcuda.so.1 may be).
here=\$(dirname "\$(readlink -f "\$0")")/..
exec "\$here/sys/ld-linux-x86-64.so.2" \\
  --library-path "\$here/lib:\$here/sys\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
  "\$here/libexec/$name" "\$@"
EOF
  chmod +x "$out/bin/$name"
done

cp python/stoker/*.py "$out/python/stoker/"
strip -o "$out/python/stoker/_lib/libstoker.so.1" "$libstoker"
patchelf --set-rpath '$ORIGIN/../../../lib' \
  "$out/python/stoker/_lib/libstoker.so.1"
git rev-parse --short HEAD >"$out/COMMIT" 2>/dev/null || echo unknown >"$out/COMMIT"

size_mb=$(du -sm "$out" | cut -f1)
echo "bundle: $out, ${size_mb} MB ($(ls "$out/lib" | wc -l) libraries," \
     "$(ls "$out/libexec" | wc -l) programs, commit $(cat "$out/COMMIT"))"
if ((size_mb > limit_mb)); then
  echo "bundle: over ${limit_mb} MB: the device's carry limit is 64 MiB with" \
       "the working tree" >&2
  exit 1
fi
