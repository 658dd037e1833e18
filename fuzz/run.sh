#!/usr/bin/env bash
# fuzz/run.sh [SECONDS_PER_TARGET] -- `make fuzz`: build the four fuzz
# targets (fuzz/fuzz_args.c, fuzz_family.c, fuzz_cli.c, fuzz_cache.c) with ASan + UBSan into
# build-fuzz/ and run each for SECONDS_PER_TARGET (default 20) from the
# committed seed corpus fuzz/corpus/<target>/ (new inputs go to
# build-fuzz/<mode>/corpus/<target>/, never into the committed one).
#
# With clang and its libFuzzer (-fsanitize=fuzzer) the targets are
# coverage-guided; otherwise fuzz/driver.c runs the corpus and seeded random
# mutations of it (deterministic), and the run says so. Exit status: 0 when
# no target crashed, hung (libFuzzer -timeout) or reported; the figures
# (cases tried, clean errors, accepted, crashes: 0) are printed per target.
# FUZZ_MODE=driver forces the fallback driver (to test it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
CUDA_HOME="${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")}"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
mkdir -p build-fuzz

cc=gcc mode=driver
if [ "${FUZZ_MODE:-}" != driver ] && command -v clang >/dev/null 2>&1 &&
   echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){(void)d;(void)n;return 0;}' |
   clang -x c -fsanitize=fuzzer,address - -o build-fuzz/probe 2>/dev/null; then
    cc=clang mode=libfuzzer
fi
out="build-fuzz/$mode" # objects differ per mode (libFuzzer's coverage instrumentation)
mkdir -p "$out"
echo "make fuzz: $mode ($cc), ${seconds} s per target"

# The library, testkit and tools objects, instrumented, through the Makefile
# (WERROR=1: the project's own builds stop on a warning, as make test).
inst="$san"
[ "$mode" = libfuzzer ] && inst="$san -fsanitize=fuzzer-no-link"
make -s BUILD="$out" CC="$cc" SANITIZE="$inst" WERROR=1 "$out/libqgemm.a" "$out/libqgemm_testkit.a" \
    "$out/tools/cli.o" "$out/tools/bench.o" "$out/tools/cmd_check.o" "$out/tools/cublaslt.o" \
    "$out/tools/cmd_compile.o" "$out/tools/cmd_info.o" "$out/tools/families.o" \
    "$out/tools/cmd_check_families.o" "$out/tools/bench_families.o" "$out/tools/compile_families.o"

cflags="-std=c11 -O1 -g -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude -Isrc -Itestkit -Itools -Ifuzz -I$CUDA_HOME/include"
libs="-ldl -lpthread -lm"
tools="$out/tools/cli.o $out/tools/bench.o $out/tools/cmd_check.o $out/tools/cublaslt.o $out/tools/cmd_compile.o $out/tools/cmd_info.o"
tools="$tools $out/tools/families.o $out/tools/cmd_check_families.o $out/tools/bench_families.o $out/tools/compile_families.o"
# fuzz_family's compile calls load a fake NVRTC (fuzz/fake_nvrtc.c: every
# compile fails at once) from QGEMM_NVRTC_DIR, the first place src/nvrtc.c
# looks, so a valid request never compiles for seconds.
mkdir -p "$out/fake-nvrtc"
$cc -shared -fPIC -O1 -Wall -Wextra -Werror fuzz/fake_nvrtc.c -o "$out/fake-nvrtc/libnvrtc.so.13"

for t in args family cli cache; do
    extra=""
    [ "$t" = cli ] && extra="$tools"
    if [ "$mode" = libfuzzer ]; then
        $cc $cflags $san -fsanitize=fuzzer "fuzz/fuzz_$t.c" $extra "$out/libqgemm_testkit.a" "$out/libqgemm.a" $libs -o "$out/fuzz_$t"
    else
        $cc $cflags $san "fuzz/fuzz_$t.c" fuzz/driver.c $extra "$out/libqgemm_testkit.a" "$out/libqgemm.a" $libs -o "$out/fuzz_$t"
    fi
done

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
export QGEMM_CACHE_DIR="$PWD/$out/cache" # the offline contexts never compile here; kept out of ~
export QGEMM_NVRTC_DIR="$PWD/$out/fake-nvrtc"
status=0
for t in args family cli cache; do
    mkdir -p "$out/corpus/$t"
    log="$out/fuzz_$t.log"
    start=$(date +%s)
    if "$out/fuzz_$t" -max_total_time="$seconds" -seed=1 -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$out/crash-$t-" "$out/corpus/$t" "fuzz/corpus/$t" \
        >"$out/fuzz_$t.out" 2>"$log"; then
        line=$(grep '^fuzz ' "$out/fuzz_$t.out" | tail -n1)
        runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -n1 || true)
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 || true)
        echo "$line (${runs:-driver}${cov:+, $cov}; $(( $(date +%s) - start )) s)"
    else
        echo "fuzz $t: FAILED (a crash, hang or sanitizer report); the last lines of $log:" >&2
        tail -n 40 "$log" >&2
        status=1
    fi
done
exit $status
