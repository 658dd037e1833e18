#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install.sh -- `make install` into a staging directory (DESTDIR) and
# programs built against what it installed, as a packager and a user would:
#
#   1. the layout: header, libqgemm.a, libqgemm.so.X.Y.Z with SONAME
#      libqgemm.so.0.5 and the links .so.0 and .so, qgemm.pc, the CMake package,
#      the CLI; no RUNPATH and no libnvrtc/libcuda in the shared library's or
#      the CLI's NEEDED entries (both are dlopen'ed at run time);
#   2. tests/install/consumer.c built with pkg-config (shared, and static
#      through --static's Libs.private) and with CMake (find_package(qgemm)
#      -> qgemm::qgemm, qgemm::qgemm_static), each run: no GPU is needed;
#   3. with NVRTC out of reach (absent, or hidden from the loader in a private
#      mount namespace when unshare is allowed), a compile fails with
#      QG_ERROR_COMPILE and "NVRTC not found" naming the paths tried.
#
# Usage: bash tests/install.sh   (from the repository root; make test runs it)
set -euo pipefail
cd "$(dirname "$0")/.."

# (under build/, not /tmp, where TMPDIR is unset: the consumers are run from
# there, and /tmp may be mounted noexec)
mkdir -p build
tmp="$(mktemp -d "${TMPDIR:-$PWD/build}/qgemm-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
stage="$tmp/stage"
prefix=/usr/local          # what the installed files say; staged under $stage
root="$stage$prefix"
fail() { echo "install.sh: FAIL: $*" >&2; exit 1; }
ok() { echo "install.sh: ok: $*"; }

for tool in pkg-config cmake readelf; do
    command -v "$tool" >/dev/null || fail "$tool is missing (apt-get install pkg-config cmake binutils)"
done

# The sub-make must not inherit the parent's jobserver or -s/-n flags wholesale.
make --no-print-directory -s install PREFIX="$prefix" DESTDIR="$stage" >/dev/null

version="$(sed -n 's/^#define QG_VERSION_STRING "\(.*\)"/\1/p' include/qgemm.h)"
for f in include/qgemm.h lib/libqgemm.a "lib/libqgemm.so.$version" lib/pkgconfig/qgemm.pc \
         lib/cmake/qgemm/qgemmConfig.cmake lib/cmake/qgemm/qgemmConfigVersion.cmake bin/qgemm; do
    [ -f "$root/$f" ] || fail "$prefix/$f not installed"
done
[ "$(readlink "$root/lib/libqgemm.so.0.5")" = "libqgemm.so.$version" ] || fail "libqgemm.so.0.5 link"
[ "$(readlink "$root/lib/libqgemm.so")" = "libqgemm.so.0.5" ] || fail "libqgemm.so link"
dyn="$(readelf -d "$root/lib/libqgemm.so.$version")"
grep -q 'SONAME.*\[libqgemm\.so\.0\.5\]' <<<"$dyn" || fail "SONAME is not libqgemm.so.0.5"
for bin in "$root/lib/libqgemm.so.$version" "$root/bin/qgemm"; do
    d="$(readelf -d "$bin")"
    if grep -Eq 'RPATH|RUNPATH' <<<"$d"; then fail "$bin has a RUNPATH: $(grep -E 'RPATH|RUNPATH' <<<"$d")"; fi
    if grep -Eq 'NEEDED.*lib(nvrtc|cuda)' <<<"$d"; then fail "$bin links NVRTC or libcuda"; fi
done
ok "layout of $prefix (qgemm $version, SONAME libqgemm.so.0.5, no RUNPATH, no libnvrtc)"

export PKG_CONFIG_PATH="$root/lib/pkgconfig"
[ "$(pkg-config --modversion qgemm)" = "$version" ] || fail "pkg-config --modversion"
# --define-prefix: the .pc in $stage/usr/local/lib/pkgconfig stands for $stage/usr/local.
cflags="$(pkg-config --define-prefix --cflags qgemm)"
libs="$(pkg-config --define-prefix --libs qgemm)"
libs_static="$(pkg-config --define-prefix --static --libs qgemm)"
cc -std=c11 -Wall -Wextra -Werror $cflags tests/install/consumer.c -o "$tmp/pc_shared" $libs
cc -std=c11 -Wall -Wextra -Werror $cflags tests/install/consumer.c -o "$tmp/pc_static" \
    "$root/lib/libqgemm.a" $(sed 's/-lqgemm//' <<<"$libs_static")
readelf -d "$tmp/pc_shared" | grep -q 'NEEDED.*libqgemm\.so\.0\.5' || fail "consumer does not need libqgemm.so.0.5"
LD_LIBRARY_PATH="$root/lib" "$tmp/pc_shared"
"$tmp/pc_static"
ok "pkg-config consumers ($libs; static: $libs_static)"

cmake -S tests/install -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake configure"; }
cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1 || { cat "$tmp/cmake.log"; fail "cmake build"; }
LD_LIBRARY_PATH="$root/lib" "$tmp/cmake/consumer_shared"
"$tmp/cmake/consumer_static"
ok "CMake consumers (find_package(qgemm 0.5) -> qgemm::qgemm, qgemm::qgemm_static)"

info="$("$root/bin/qgemm" info)" || fail "qgemm info"
head -n 3 <<<"$info"

# Without NVRTC: the consumer must fail with QG_ERROR_COMPILE naming the paths
# tried. The library itself says whether NVRTC is in reach (`qgemm info`, same
# environment): where it is, hide it from the system loader (an empty
# ld.so.cache in a private mount namespace, where unshare is allowed: root);
# where even that leaves it in reach (a default directory such as /usr/lib),
# the case is left to tests/test_status.c. (Asking `ldconfig -p` instead was
# wrong where /sbin is not on PATH.) An empty kernel cache of its own: a cubin
# of the consumer's problem left in the user's cache would load without
# compiling.
no_nvrtc_env=(env -u QGEMM_NVRTC_DIR CUDA_HOME=/nonexistent LD_LIBRARY_PATH="$root/lib"
              QGEMM_CACHE_DIR="$tmp/no-nvrtc-cache")
hide() { unshare -m bash -c 'mount --bind /dev/null /etc/ld.so.cache && exec "$@"' _ "$@"; }
nvrtc_missing() {
    local info
    info="$("$@" "${no_nvrtc_env[@]}" "$root/bin/qgemm" info 2>&1)" || true
    grep -q '^nvrtc: *missing' <<<"$info"
}
if nvrtc_missing; then
    "${no_nvrtc_env[@]}" "$tmp/pc_shared" --expect-no-nvrtc | tail -n 1
    ok "without NVRTC a compile fails with QG_ERROR_COMPILE naming the paths tried"
elif unshare -m true 2>/dev/null && nvrtc_missing hide; then
    hide "${no_nvrtc_env[@]}" "$tmp/pc_shared" --expect-no-nvrtc | tail -n 1
    ok "with NVRTC hidden a compile fails with QG_ERROR_COMPILE naming the paths tried"
else
    echo "install.sh: NVRTC stays in reach here (no private mount namespace, or in a default loader directory): the no-NVRTC case is left to tests/test_status.c (nvrtc_search_names_every_path_tried)"
fi
echo "install.sh: passed"
