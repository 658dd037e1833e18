#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/install.sh -- `make install` into a staging directory (DESTDIR) and
# programs built against what it installed, as a packager and a user would:
#
#   0. a packager's flags: `make CFLAGS="-O3 -g" CPPFLAGS=-D... LDFLAGS=-Wl,-z,now lib`
#      in a build folder of its own builds, every compile carries the
#      project's flags and the user's (the user's -O3 last, no -O2, no
#      -Werror without WERROR=1), and the link the user's LDFLAGS (BIND_NOW);
#   1. the layout: header, libqgemm.a, libqgemm.so.X.Y.Z with SONAME
#      libqgemm.so.0.5 and the links .so.0 and .so, qgemm.pc, the CMake package,
#      the CLI, the licence (share/doc/qgemm/LICENSE); no RUNPATH and no
#      libnvrtc/libcuda in the shared library's or the CLI's NEEDED entries
#      (both are dlopen'ed at run time);
#   2. tests/install/consumer.c built with pkg-config (shared, and static
#      through --static's Libs.private) and with CMake (find_package(qgemm 0.5
#      REQUIRED) -> qgemm::qgemm, qgemm::qgemm_static), each run: no GPU is
#      needed; the same on a multiarch install (PREFIX=/usr
#      LIBDIR=/usr/lib/<arch>-linux-gnu), whose CMake targets must name
#      /usr/include; the version requests qgemmConfigVersion.cmake accepts
#      (tests/install/version: 0.5, 0.5.0 EXACT, a range; not 0.4, 0.6, 1.0);
#   3. `make uninstall` of both installs leaves no file and no qgemm folder;
#   4. with NVRTC out of reach (absent, or hidden from the loader in a private
#      mount namespace when unshare is allowed), a compile fails with
#      QG_ERROR_COMPILE and "NVRTC not found" naming the paths tried.
#
# Needs make, cc, pkg-config, cmake (>= 3.19) and readelf (binutils).
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

# ---- 0. a packager's CFLAGS, CPPFLAGS, LDFLAGS ----------------------------------
# (in a build folder of its own: the objects of build/ were made with other flags)
flags_log="$tmp/flags.log"
make --no-print-directory BUILD="$tmp/flags-build" CFLAGS="-O3 -g" CPPFLAGS="-DQG_PACKAGER_CPPFLAGS=1" \
    LDFLAGS="-Wl,-z,now" lib >"$flags_log" 2>&1 || { tail -n 30 "$flags_log"; fail "make CFLAGS=\"-O3 -g\" CPPFLAGS=... LDFLAGS=... lib"; }
compiles="$(grep -E '^[^ ]*cc .* -c ' "$flags_log")"
ncompiles="$(grep -c . <<<"$compiles")"
[ "$ncompiles" -gt 1 ] || fail "no compile lines in the make output: $(head -n 5 "$flags_log")"
bad="$(grep -v -- '-DQG_PACKAGER_CPPFLAGS=1' <<<"$compiles" || true)"
[ -z "$bad" ] || fail "a compile without the user's CPPFLAGS: $(head -n 1 <<<"$bad")"
bad="$(grep -Ev -- ' -Iinclude .*-std=c11 .*-O3 -g -c ' <<<"$compiles" || true)"
[ -z "$bad" ] || fail "a compile without the project's flags before the user's -O3 -g: $(head -n 1 <<<"$bad")"
bad="$(grep -E -- ' -O2 | -Werror ' <<<"$compiles" || true)"
[ -z "$bad" ] || fail "a compile with -O2 or -Werror though the user said CFLAGS=-O3 -g: $(head -n 1 <<<"$bad")"
readelf -d "$tmp/flags-build/libqgemm.so.$(sed -n 's/^#define QG_VERSION_STRING "\(.*\)"/\1/p' include/qgemm.h)" |
    grep -Eq 'BIND_NOW|FLAGS.*NOW' || fail "LDFLAGS=-Wl,-z,now did not reach the shared library's link (no BIND_NOW)"
rm -rf "$tmp/flags-build"
ok "make CFLAGS=\"-O3 -g\" CPPFLAGS=-D... LDFLAGS=-Wl,-z,now lib: $ncompiles compiles with the project's flags, then the user's; no -O2, no -Werror; the link took LDFLAGS"

# The sub-make must not inherit the parent's jobserver or -s/-n flags wholesale.
make --no-print-directory -s install PREFIX="$prefix" DESTDIR="$stage" >/dev/null

version="$(sed -n 's/^#define QG_VERSION_STRING "\(.*\)"/\1/p' include/qgemm.h)"
for f in include/qgemm.h lib/libqgemm.a "lib/libqgemm.so.$version" lib/pkgconfig/qgemm.pc \
         lib/cmake/qgemm/qgemmConfig.cmake lib/cmake/qgemm/qgemmConfigVersion.cmake bin/qgemm \
         share/doc/qgemm/LICENSE; do
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
cmp -s LICENSE "$root/share/doc/qgemm/LICENSE" || fail "share/doc/qgemm/LICENSE is not LICENSE"
ok "layout of $prefix (qgemm $version, SONAME libqgemm.so.0.5, no RUNPATH, no libnvrtc, share/doc/qgemm/LICENSE)"

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
ok "CMake consumers (find_package(qgemm 0.5 REQUIRED) -> qgemm::qgemm, qgemm::qgemm_static)"

# The version requests qgemmConfigVersion.cmake meets: before 1.0 the same
# major.minor only (the SONAME's ABI), a range when the version lies in it.
cmake -S tests/install/version -B "$tmp/cmake-version" -DCMAKE_PREFIX_PATH="$root" \
    -DREQUESTS="0.5|$version EXACT|0.4...0.6|0.5...<1.0|0.4|0.6|1.0|0.3...0.4" >"$tmp/version.log" 2>&1 ||
    { cat "$tmp/version.log"; fail "cmake configure of tests/install/version"; }
got="$(sed -n "s/^-- qgemm-request '\(.*\)': \(FOUND\|NOT FOUND\).*/\1=\2/p" "$tmp/version.log" | paste -sd'|' -)"
want="0.5=FOUND|$version EXACT=FOUND|0.4...0.6=FOUND|0.5...<1.0=FOUND|0.4=NOT FOUND|0.6=NOT FOUND|1.0=NOT FOUND|0.3...0.4=NOT FOUND|=FOUND"
[ "$got" = "$want" ] || fail "find_package version requests: got $got, want $want"
ok "qgemmConfigVersion.cmake: 0.5, $version EXACT, 0.4...0.6 and none are met; 0.4, 0.6, 1.0 and 0.3...0.4 are not"

# ---- a multiarch install (Debian's LIBDIR), consumed by pkg-config and CMake ----
mstage="$tmp/stage-multiarch"
mlib="/usr/lib/$(uname -m)-linux-gnu"
mroot="$mstage/usr"
make --no-print-directory -s install PREFIX=/usr LIBDIR="$mlib" DESTDIR="$mstage" >/dev/null
for f in include/qgemm.h "${mlib#/usr/}/libqgemm.so.$version" "${mlib#/usr/}/libqgemm.a" \
         "${mlib#/usr/}/pkgconfig/qgemm.pc" "${mlib#/usr/}/cmake/qgemm/qgemmConfig.cmake" \
         "${mlib#/usr/}/cmake/qgemm/qgemmConfigVersion.cmake" bin/qgemm share/doc/qgemm/LICENSE; do
    [ -e "$mroot/$f" ] || fail "multiarch: /usr/$f not installed"
done
# (PKG_CONFIG_SYSROOT_DIR, not --define-prefix: that takes the prefix to be
# two folders above the .pc file's, which a multiarch libdir is not)
PKG_CONFIG_PATH="$mstage$mlib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$mstage" \
    pkg-config --cflags --libs qgemm >"$tmp/m.pc" ||
    fail "multiarch: pkg-config"
grep -q -- "-I$mroot/include" "$tmp/m.pc" && grep -q -- "-L$mstage$mlib" "$tmp/m.pc" ||
    fail "multiarch: pkg-config says $(cat "$tmp/m.pc")"
cmake -S tests/install -B "$tmp/cmake-multiarch" -DCMAKE_PREFIX_PATH="$mroot" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >"$tmp/cmake-m.log" 2>&1 || { cat "$tmp/cmake-m.log"; fail "multiarch: cmake configure"; }
cmake --build "$tmp/cmake-multiarch" -v >>"$tmp/cmake-m.log" 2>&1 || { cat "$tmp/cmake-m.log"; fail "multiarch: cmake build"; }
grep -q -- "-isystem $mroot/include\|-I$mroot/include" "$tmp/cmake-m.log" ||
    fail "multiarch: the CMake target does not name $mroot/include: $(grep -m1 -- ' -c ' "$tmp/cmake-m.log")"
grep -q "$mstage$mlib/libqgemm.so.$version" "$tmp/cmake-m.log" ||
    fail "multiarch: the CMake target does not link $mlib/libqgemm.so.$version"
LD_LIBRARY_PATH="$mstage$mlib" "$tmp/cmake-multiarch/consumer_shared" >/dev/null
"$tmp/cmake-multiarch/consumer_static" >/dev/null
ok "multiarch install (LIBDIR=$mlib): pkg-config, and CMake's qgemm::qgemm -> /usr/include and $mlib, built and run"

# ---- make uninstall: nothing left --------------------------------------------------
uninstall_check() {  # $1 the DESTDIR, then make's variables
    local dest="$1" left
    shift
    make --no-print-directory -s uninstall DESTDIR="$dest" "$@" >/dev/null || fail "make uninstall $*"
    left="$(find "$dest" \( ! -type d -o -name '*qgemm*' \) | sort)"
    [ -z "$left" ] || fail "make uninstall $* left: $(paste -sd' ' <<<"$left")"
}
cp -a "$stage" "$tmp/stage-uninstall"
uninstall_check "$tmp/stage-uninstall" PREFIX="$prefix"
uninstall_check "$mstage" PREFIX=/usr LIBDIR="$mlib"
rm -rf "$tmp/stage-uninstall"
ok "make uninstall (both layouts) leaves no file, link or qgemm folder"

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
