#!/usr/bin/env bash
# The Debian packages (stokerd, libstoker1, libstoker-dev): built with CPack,
# checked with lintian, their control fields and contents checked, unpacked
# together into a scratch root with dpkg -x, their programs run (the packaged
# stokerd serving, the packaged stokerctl asking), and a trainer built out of
# tree against the unpacked SDK twice: with find_package(stoker) and with
# pkg-config.
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
fail() { echo "package test: $*"; exit 1; }

cpack --config "$build/CPackConfig.cmake" -B "$scratch/pkg" >/dev/null
version=$(dpkg-deb -f "$scratch"/pkg/stokerd_*.deb Version)
for package in stokerd:amd64 libstoker1:amd64 libstoker-dev:amd64 python3-stoker:all; do
  deb=$scratch/pkg/${package%%:*}_${version}_${package##*:}.deb
  [[ -f $deb ]] || fail "no $package package: $(ls "$scratch/pkg")"
  echo "package: $(basename "$deb") ($(stat -c %s "$deb") bytes)"
done
daemon_deb=$scratch/pkg/stokerd_${version}_amd64.deb
runtime_deb=$scratch/pkg/libstoker1_${version}_amd64.deb
dev_deb=$scratch/pkg/libstoker-dev_${version}_amd64.deb
python_deb=$scratch/pkg/python3-stoker_${version}_all.deb

# Control fields: each package depends on what it needs.
# Listings are read whole before they are searched: `producer | grep -q`
# under pipefail fails whenever grep exits before the producer has written
# everything (SIGPIPE), which made this test fail at random.
daemon_depends=$(dpkg-deb -f "$daemon_deb" Depends)
[[ $daemon_depends == *'libgrpc++'* ]] ||
  fail "stokerd does not depend on gRPC: $daemon_depends"
dev_depends=$(dpkg-deb -f "$dev_deb" Depends)
[[ $dev_depends == *"libstoker1 (= $version)"* && $dev_depends == *libabsl-dev* ]] ||
  fail "libstoker-dev Depends: $dev_depends"
python_depends=$(dpkg-deb -f "$python_deb" Depends)
[[ $python_depends == *"libstoker1 (>= $version)"* ]] ||
  fail "python3-stoker Depends: $python_depends"
daemon_control=$(dpkg-deb --ctrl-tarfile "$daemon_deb" | tar -tf -)
grep -qx './conffiles' <<<"$daemon_control" || fail "stokerd has no conffiles"
runtime_control=$(dpkg-deb --ctrl-tarfile "$runtime_deb" | tar -tf -)
grep -qx './shlibs' <<<"$runtime_control" ||
  fail "libstoker1 has no shlibs file: $runtime_control"
runtime_triggers=$(dpkg-deb --ctrl-tarfile "$runtime_deb" | tar -xOf - ./triggers)
grep -q ldconfig <<<"$runtime_triggers" || fail "libstoker1 does not trigger ldconfig"

# lintian: no errors; warnings are printed (docs/packaging.md explains
# those that remain).
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$daemon_deb" "$runtime_deb" "$dev_deb" "$python_deb" \
    >"$scratch/lintian.txt" 2>&1 || true
  sed 's/^/lintian: /' "$scratch/lintian.txt"
  ! grep -q '^E: ' "$scratch/lintian.txt" || fail "lintian reports errors"
else
  fail "lintian is not installed (scripts/install-deps.sh installs it)"
fi

root=$scratch/root
for deb in "$daemon_deb" "$runtime_deb" "$dev_deb" "$python_deb"; do
  dpkg-deb -x "$deb" "$root"
done
multiarch=usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
in_package() {  # in_package DEB PATH: the package holds PATH
  local listing
  listing=$(dpkg-deb -c "$1" | awk '{print $6}')
  grep -qx "\./$2" <<<"$listing" || fail "$(basename "$1") lacks /$2"
}
for file in usr/sbin/stokerd usr/bin/stokerctl lib/systemd/system/stokerd.service \
    lib/systemd/system/stokerd.socket usr/lib/sysusers.d/stoker.conf \
    usr/lib/tmpfiles.d/stoker.conf etc/stoker/stokerd.conf \
    usr/share/man/man8/stokerd.8.gz usr/share/man/man1/stokerctl.1.gz \
    usr/share/doc/stokerd/README.md usr/share/doc/stokerd/docs/operations.md \
    usr/share/doc/stokerd/docs/design-notes.md var/lib/stoker/datasets/; do
  in_package "$daemon_deb" "$file"
done
in_package "$python_deb" usr/lib/python3/dist-packages/stoker/loader.py
in_package "$python_deb" usr/share/doc/python3-stoker/copyright
in_package "$runtime_deb" "$multiarch/libstoker.so.1"
in_package "$runtime_deb" "$multiarch/libstoker.so.$version"
for file in "$multiarch/libstoker.so" usr/include/stoker/client.h \
    usr/include/stoker/export.h usr/include/stoker/vocabulary.h \
    "$multiarch/cmake/stoker/stokerConfig.cmake" \
    "$multiarch/pkgconfig/stoker.pc"; do
  in_package "$dev_deb" "$file"
done
for package in stokerd libstoker1 libstoker-dev; do
  head -1 "$root/usr/share/doc/$package/copyright" | grep -q '^Format: ' ||
    fail "$package has no machine-readable copyright file"
  [[ -f $root/usr/share/doc/$package/changelog.gz ]] || fail "$package has no changelog"
done

# The library: SONAME libstoker.so.1, and only the public API exported.
library=$root/$multiarch/libstoker.so.$version
soname=$(objdump -p "$library" | awk '/SONAME/ {print $2}')
[[ $soname == libstoker.so.1 ]] || fail "SONAME is '$soname'"
nm -D --defined-only "$library" | awk '{print $3}' | c++filt >"$scratch/exports.txt"
exported=$(wc -l <"$scratch/exports.txt")
echo "libstoker.so.1 exports $exported symbols"
# Names defined in those libraries or namespaces (a public function may take
# an absl::Status; it may not be absl's own).
if grep -E '^((typeinfo|typeinfo name|vtable|VTT|guard variable) for )?(google::|grpc|absl::|stoker::v1::|stoker::internal::|spdlog|boost|fmt::)' \
    "$scratch/exports.txt" | head -5 | grep .; then
  fail "libstoker exports implementation symbols (above)"
fi
grep -q '^stoker::Client::Connect' "$scratch/exports.txt" || fail "Client::Connect is not exported"

# Nothing packaged needs a CUDA toolkit on the node (the runtime is linked
# in statically): only Debian packages and the NVIDIA driver.
for program in usr/sbin/stokerd usr/bin/stokerctl "$multiarch/libstoker.so.$version"; do
  needed=$(objdump -p "$root/$program" | awk '/NEEDED/ {print $2}')
  ! grep -q cuda <<<"$needed" || fail "/$program needs $(grep cuda <<<"$needed")"
done

# The shipped configuration is valid (its dataset root is the package's).
"$root/usr/sbin/stokerd" --config="$root/etc/stoker/stokerd.conf" --check_config \
  --dataset_roots="$root/var/lib/stoker/datasets" --socket="$scratch/check.sock" \
  >/dev/null

# Out of tree, with find_package(stoker).
cmake -S "$source/tests/package_consumer" -B "$scratch/consumer" \
  -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$scratch/consumer" >/dev/null
# And with pkg-config.
pcdir=$root/$multiarch/pkgconfig
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs stoker)
includedir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=includedir stoker)
[[ $(realpath "$includedir") == "$root/usr/include" ]] ||
  fail "pkg-config includedir: $includedir"
g++ -std=c++20 "$source/tests/package_consumer/main.cc" $flags \
  -o "$scratch/consumer_pc"

# The packaged daemon serves both.
"$make_dataset" --out="$scratch/data" --classes=2 --per_class=4 --width=64 \
  --height=48 >/dev/null
socket=$scratch/stoker.sock
"$root/usr/sbin/stokerd" --config= --socket="$socket" --workers=1 \
  2>"$scratch/stokerd.log" &
daemon=$!
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
export LD_LIBRARY_PATH=$root/$multiarch
out=$("$scratch/consumer/consumer" "$socket" "$scratch/data")
[[ $out == "batch 0: 4 images" ]] || fail "consumer: $out"
out=$("$scratch/consumer_pc" "unix://$socket" "$scratch/data")
[[ $out == "batch 0: 4 images" ]] || fail "consumer (pkg-config): $out"
# The packaged Python module, loading the packaged library.
out=$(PYTHONPATH=$root/usr/lib/python3/dist-packages /usr/bin/python3 - \
  "$socket" "$scratch/data" <<'PY'
import sys, stoker
with stoker.Client(sys.argv[1]) as client:
    job = client.create_job({"dataset": {"path": sys.argv[2]}, "batch_size": 4,
                             "slots": 2, "pipeline": [{"resize": {"height": 8, "width": 8}}]})
    print(stoker.library_version(), job["num_samples"], len(client.list_jobs()))
    client.delete_job(job["id"])
PY
)
[[ $out == "$version 8 1" ]] || fail "python3-stoker: $out"
status=$("$root/usr/bin/stokerctl" --socket="$socket" status)
grep -q SERVING <<<"$status" || fail "stokerctl status: $status"
kill -TERM "$daemon"
wait "$daemon"
daemon=
echo "package OK"
