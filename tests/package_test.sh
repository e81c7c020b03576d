#!/usr/bin/env bash
# The Debian package: built with CPack, unpacked into a scratch root with
# dpkg -x, its programs run (the packaged stokerd serving, the packaged
# stokerctl asking), and a trainer built out of tree against the unpacked
# SDK twice: with find_package(stoker) and with pkg-config.
#   package_test.sh <build dir> <source dir> <make_dataset binary>
set -euo pipefail
build=$1
source=$2
make_dataset=$3
scratch=$(mktemp -d "${TMPDIR:-/tmp}/stoker-package.XXXXXX")
daemon=
cleanup() {
  [[ -n $daemon ]] && kill "$daemon" 2>/dev/null && wait "$daemon" || true
  rm -rf "$scratch"
}
trap cleanup EXIT

cpack --config "$build/CPackConfig.cmake" -B "$scratch/pkg" >/dev/null
deb=$(ls "$scratch"/pkg/stoker_*_amd64.deb)
echo "package: $(basename "$deb") ($(stat -c %s "$deb") bytes)"
dpkg-deb -f "$deb" Depends | grep -q 'libgrpc++' ||
  { echo "Depends lacks gRPC: $(dpkg-deb -f "$deb" Depends)"; exit 1; }
dpkg-deb --ctrl-tarfile "$deb" | tar -tf - | grep -q conffiles
root=$scratch/root
dpkg-deb -x "$deb" "$root"
for file in usr/sbin/stokerd usr/bin/stokerctl \
    usr/lib/systemd/system/stokerd.service usr/lib/systemd/system/stokerd.socket \
    usr/lib/sysusers.d/stoker.conf usr/lib/tmpfiles.d/stoker.conf \
    etc/stoker/stokerd.conf usr/include/stoker/client.h \
    usr/share/doc/stoker/README.md; do
  [[ -e $root/$file ]] || { echo "missing from the package: /$file"; exit 1; }
done
libdir=$(dirname "$(find "$root/usr" -name 'libstoker.so' | head -1)")
[[ -f $libdir/cmake/stoker/stokerConfig.cmake && -f $libdir/pkgconfig/stoker.pc ]] ||
  { echo "no CMake package or pkg-config file beside $libdir/libstoker.so"; exit 1; }

# The example configuration is valid as shipped.
"$root/usr/sbin/stokerd" --config="$root/etc/stoker/stokerd.conf" --check_config \
  >/dev/null

# Out of tree, with find_package(stoker).
cmake -S "$source/tests/package_consumer" -B "$scratch/consumer" \
  -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/consumer" >/dev/null
# And with pkg-config.
flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs stoker)
includedir=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --variable=includedir stoker)
[[ $(realpath "$includedir") == "$root/usr/include" ]] ||
  { echo "pkg-config includedir: $includedir"; exit 1; }
g++ -std=c++20 "$source/tests/package_consumer/main.cc" $flags \
  -o "$scratch/consumer_pc"

# The packaged daemon serves both.
"$make_dataset" --out="$scratch/data" --classes=2 --per_class=4 --width=64 \
  --height=48 >/dev/null
socket=$scratch/stoker.sock
"$root/usr/sbin/stokerd" --config= --socket="unix://$socket" --workers=1 \
  2>"$scratch/stokerd.log" &
daemon=$!
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
export LD_LIBRARY_PATH=$libdir
out=$("$scratch/consumer/consumer" "unix://$socket" "$scratch/data")
[[ $out == "batch 0: 4 images" ]] || { echo "consumer: $out"; exit 1; }
out=$("$scratch/consumer_pc" "unix://$socket" "$scratch/data")
[[ $out == "batch 0: 4 images" ]] || { echo "consumer (pkg-config): $out"; exit 1; }
"$root/usr/bin/stokerctl" --socket="unix://$socket" status | grep -q SERVING
kill -TERM "$daemon"
wait "$daemon"
daemon=
echo "package OK"
