#!/usr/bin/env bash
# bench/device-check.sh -- everything that needs the GPU, in one run:
# build, tests, compute-sanitizer (memcheck, racecheck, synccheck) on
# `qgemm check --quick`, on one small GEMM per store-chunk width of D and on
# the hostile-input GPU tests (`qgemm_tests gpu_hostile_`), the full
# `qgemm check`, and the benchmarks.
#
# Run from the repository root on the GPU machine:
#     OUT=/some/dir bench/device-check.sh [--only STEP,STEP...]
# Steps, in order:
#     build     make -j16                          -> $OUT/build.log
#     tests     build/qgemm_tests                  -> $OUT/tests.log
#               (QGEMM_TEST_CACHED_CALLS=1000000: gpu_flat_memory_cached_calls
#               makes its full 10^6 calls here; 10^5 when run by hand)
#               On one H100 the suite but the compile sweep took ~13 minutes
#               (2026-11-27-h100-18 tests-d/-e.log), past one 10-minute call:
#               run it in two calls, TEST_FILTER="-compile_every -gpu_grouped
#               -gpu_hostile -gpu_masked -gpu_pdl -gpu_reference -gpu_split
#               -gpu_invalid -gpu_multi" then TEST_FILTER="gpu_grouped
#               gpu_hostile gpu_masked gpu_pdl gpu_reference gpu_split
#               gpu_invalid" (words and -words as build/qgemm_tests takes them)
#     memcheck  compute-sanitizer --tool memcheck  -> $OUT/sanitizer.log
#     racecheck compute-sanitizer --tool racecheck -> $OUT/sanitizer.log
#     synccheck compute-sanitizer --tool synccheck -> $OUT/sanitizer.log
#     check     build/qgemm check                  -> $OUT/check.txt
#     bench     build/qgemm bench                  -> $OUT/bench.txt
#     json      build/qgemm bench --json           -> $OUT/bench.json
#     grouped   build/qgemm bench --grouped, and more MoE shapes -> $OUT/bench_grouped.txt
#     chain     build/qgemm bench --chain 8        -> $OUT/bench_chain.txt
#     python    build the Python package in place + pytest tests/python -> $OUT/python.log
#     examples  examples/gemm and examples/moe.py on the GPU   -> $OUT/python.log
#     multigpu  two GPUs (issue 31): qgemm_tests gpu_multi_, pytest
#               tests/python/test_multi_gpu.py (both say "skipped: one GPU"
#               with one), examples/ep_moe.py under torchrun on up to 2 GPUs
#                                          -> $OUT/multigpu.log, multi-gpu.json
#     peers     bench/peers.py: qgemm beside DeepGEMM and cuBLASLt, kineto and
#               events, host overhead                  -> $OUT/peers.json, peers.txt
#               (DeepGEMM from .peers/, a git-ignored folder carried to the
#               machine: .peers/build.sh builds it, .peers/env.sh sets it up;
#               without it the rows say "DeepGEMM: not installed")
#     hostprobe bench/host_probe.c: CPU cost of each driver call of the launch
#               path, then build/qgemm bench --host on DeepGEMM's host shapes -> $OUT/host.log
#     suite     bench/deepgemm_suite.py: DeepGEMM's own SM90 tests (every file) with
#               deep_gemm resolving to qgemm     -> $OUT/deepgemm-suite.json, suite.log
#               (needs DeepGEMM's source in .peers/DeepGEMM, not its build)
# Default steps: build tests memcheck racecheck synccheck check python examples
# multigpu peers suite (12 files); bench, json, grouped and chain (qgemm beside cuBLASLt only)
# run when named with --only.
# ("sanitize" selects the three sanitizer steps.) Every step runs even when
# an earlier one failed; each exit code goes to $OUT/summary.txt, printed at
# the end. At most 12 files are written under $OUT. The kernel cache lives
# outside $OUT: $QGEMM_CACHE_DIR, default /tmp/qgemm-cache.
# Exit status: 0 when every selected step returned 0, 1 otherwise.
# The step_* functions are called indirectly, through run_step.
# shellcheck disable=SC2317
set -u

ALL_STEPS="build tests memcheck racecheck synccheck check bench json grouped chain python examples multigpu peers suite hostprobe"
DEFAULT_STEPS="build tests memcheck racecheck synccheck check python examples multigpu peers suite"

usage() {
    sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
}

only=""
while [ $# -gt 0 ]; do
    case "$1" in
    --only) only="${2:-}"; shift 2 ;;
    --only=*) only="${1#--only=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "device-check.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done

selected=""
if [ -z "$only" ]; then
    selected="$DEFAULT_STEPS"
else
    for s in ${only//,/ }; do
        case " $ALL_STEPS sanitize " in
        *" $s "*) ;;
        *) echo "device-check.sh: unknown step '$s' (steps: $ALL_STEPS sanitize)" >&2; exit 2 ;;
        esac
        [ "$s" = sanitize ] && s="memcheck racecheck synccheck"
        selected="$selected $s"
    done
fi
wanted() { case " $selected " in *" $1 "*) return 0 ;; esac; return 1; }

if [ ! -f Makefile ] || [ ! -d tools ]; then
    echo "device-check.sh: run it from the repository root" >&2
    exit 2
fi
OUT="${OUT:-/tmp/qgemm-device-check}"
mkdir -p "$OUT" || { echo "device-check.sh: cannot create OUT=$OUT" >&2; exit 2; }
export QGEMM_CACHE_DIR="${QGEMM_CACHE_DIR:-/tmp/qgemm-cache}"
mkdir -p "$QGEMM_CACHE_DIR"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
failed=0
sanitizer_log_started=0

# T CMD... -- run with a time limit, so a hung kernel costs minutes, not the lease.
T() { timeout --kill-after=10 "${STEP_TIMEOUT:-300}" "$@"; }

# record NAME RC SECONDS
record() {
    printf '%-10s rc=%-3s %5ss\n' "$1" "$2" "$3" >> "$SUMMARY"
    [ "$2" -eq 0 ] || failed=1
}

# run_step NAME -- runs step_NAME, timing it and recording its exit code.
run_step() {
    wanted "$1" || return 0
    printf '\n==> %s\n' "$1"
    local t0=$SECONDS rc
    "step_$1"
    rc=$?
    record "$1" "$rc" "$((SECONDS - t0))"
    printf '==> %s: rc=%s (%ss)\n' "$1" "$rc" "$((SECONDS - t0))"
}

find_sanitizer() {
    local c
    for c in "$(command -v compute-sanitizer 2>/dev/null)" \
             "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
             /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
        [ -n "$c" ] && [ -x "$c" ] && { echo "$c"; return 0; }
    done
    return 1
}

step_build() {
    make -j16 > "$OUT/build.log" 2>&1
    local rc=$?
    tail -n 20 "$OUT/build.log"
    return "$rc"
}

step_tests() {
    # The CPU-only compile sweep already ran in CI; here only what needs the GPU.
    # Issue 27's flat-memory test runs its full 10^6 cached calls here.
    QGEMM_TEST_CACHED_CALLS="${QGEMM_TEST_CACHED_CALLS:-1000000}" \
        T build/qgemm_tests ${TEST_FILTER:--compile_every} 2>&1 | tee "$OUT/tests.log"
    return "${PIPESTATUS[0]}"
}

sanitize() { # sanitize TOOL EXTRA_FLAGS...
    local tool="$1" cs rc
    shift
    # Three steps append to one log: start it fresh at the first of them.
    [ "$sanitizer_log_started" = 1 ] || : > "$OUT/sanitizer.log"
    sanitizer_log_started=1
    if ! cs=$(find_sanitizer); then
        echo "compute-sanitizer not found" | tee -a "$OUT/sanitizer.log"
        return 127
    fi
    printf '\n===== compute-sanitizer --tool %s: build/qgemm check --quick\n' "$tool" \
        >> "$OUT/sanitizer.log"
    # --error-exitcode: a reported hazard fails the step even if the check passes.
    T "$cs" --tool "$tool" --error-exitcode 86 "$@" build/qgemm check --quick 2>&1 |
        tee -a "$OUT/sanitizer.log" | tail -n 25
    rc=${PIPESTATUS[0]}
    # check --quick runs 64x16 tiles (16-column store chunks of D), one
    # masked 256x128 and one split-K 64x32: one small GEMM per store-chunk
    # width and main-loop kind as well, and a split-K one whose clusters take
    # two tiles each (80 tiles on 66 clusters) over an odd K-block count.
    # 64x16 there makes 567 tiles, four or five a CTA: the SFB buffers of
    # the per-tile pipeline are reused (three tiles a CTA at least), which
    # the shapes above (one or two tiles a CTA) never reach.
    local extra=("$@") c r
    # sanitized PATTERN [FLAG...] -- COMMAND...: COMMAND under the tool (and
    # FLAGs), its lines matching PATTERN (and the summary, errors) into the
    # log; a failure or a report fails the step.
    sanitized() {
        local pattern="$1" flags=()
        shift
        while [ "$1" != -- ]; do flags+=("$1"); shift; done
        shift
        printf '===== compute-sanitizer --tool %s%s: %s\n' "$tool" "${flags[*]:+ ${flags[*]}}" "$*" \
            >> "$OUT/sanitizer.log"
        T "$cs" --tool "$tool" "${flags[@]}" --error-exitcode 86 "${extra[@]}" "$@" 2>&1 |
            grep -E "$pattern|SUMMARY|rror" | tee -a "$OUT/sanitizer.log"
        r=${PIPESTATUS[0]}
        [ "$rc" = 0 ] && rc=$r
    }
    local bench=(--no-cublas --runs 20 --warmup 3)
    for c in 256,128,0,a 128,256,0,none 128,96,0,none 128,64,0,k2 64,16,0,none; do
        sanitized "^520x1000x384 .*," -- build/qgemm bench --shape 520x1000x384 --config "$c" "${bench[@]}"
    done
    # The masked walker over many tiles a CTA (8 groups x 2 m-blocks x 64
    # n-blocks of 64x16 on 132 SMs: 7-8 a CTA).
    sanitized "^8x200.*," -- build/qgemm bench --grouped-masked 8,256,200 --shape 256x1024x384 \
        --config 64,16,0,none "${bench[@]}"
    # The wide masked tiles with A multicast that the tile hand-over made
    # legal: 16 groups of 200 rows, N 4096, 512 tiles either way (128x256: 2
    # m-blocks x 16 n-blocks a group; 256x128: 1 x 32), about 4 a CTA.
    for c in 128,256,0,a 256,128,0,a; do
        sanitized "^16x200.*," -- build/qgemm bench --grouped-masked 16,512,200 --shape 512x4096x384 \
            --config "$c" "${bench[@]}"
    done
    # Issue 27: out-of-range m_indices / masked_m / group_ends, every refused
    # call class, forged cache entries (tests/test_hostile_gpu.c).
    # These tests provoke driver API errors on purpose (host pointers, a
    # forged cubin the driver refuses): memcheck would count each as an
    # error, so it reports device-side errors only here.
    local api=()
    [ "$tool" = memcheck ] && api=(--report-api-errors no)
    sanitized "^\[ (PASS|FAIL|SKIP) \]|FAIL|passed," "${api[@]}" -- build/qgemm_tests gpu_hostile_
    return "$rc"
}
step_memcheck() { sanitize memcheck; }
step_racecheck() { sanitize racecheck; }
step_synccheck() { sanitize synccheck; }

step_check() {
    T build/qgemm check 2>&1 | tee "$OUT/check.txt"
    return "${PIPESTATUS[0]}"
}

step_bench() {
    T build/qgemm bench | tee "$OUT/bench.txt"
    return "${PIPESTATUS[0]}"
}

step_json() {
    T build/qgemm bench --json > "$OUT/bench.json"
    local rc=$?
    head -c 2000 "$OUT/bench.json"
    echo
    return "$rc"
}

# The issue's MoE tables, then shapes nearer DeepSeek-V3's serving: 32 experts
# of 256 rows in the contiguous layout (prefill), and masked groups of
# decode: 8 x 256, 32 x 128, and 32 groups of M_max 256 with 64 valid rows.
step_grouped() {
    local rc=0 nk="--shape 1x4096x7168 --shape 1x7168x2048"
    T build/qgemm bench --grouped | tee "$OUT/bench_grouped.txt"
    rc=${PIPESTATUS[0]}
    # shellcheck disable=SC2086
    for extra in "--grouped-contiguous 32,256 --grouped-masked 32,256,64" \
                 "--grouped-masked 8,256" "--grouped-masked 32,128"; do
        printf '\n===== qgemm bench %s %s\n' "$extra" "$nk" | tee -a "$OUT/bench_grouped.txt"
        T build/qgemm bench $extra $nk | tee -a "$OUT/bench_grouped.txt"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    done
    return "$rc"
}

step_chain() {
    T build/qgemm bench --chain 8 | tee "$OUT/bench_chain.txt"
    return "${PIPESTATUS[0]}"
}

# The Python package, built in place (no network there), and its pytest suite
# (GPU tests included: torch, CuPy and JAX are on the GPU machine).
step_python() {
    (python3 python/setup.py build_ext --inplace > "$OUT/python.log" 2>&1 &&
        PYTHONPATH=python T python3 -m pytest -q -rs tests/python >> "$OUT/python.log" 2>&1)
    local rc=$?
    tail -n 15 "$OUT/python.log"
    return "$rc"
}

step_examples() {
    make examples >> "$OUT/python.log" 2>&1 && T examples/gemm &&
        PYTHONPATH=python T python3 examples/moe.py
}

# need_extension LOG -- the Python extension built in place (as step_python
# builds it) unless it is there already; the build's output goes to LOG.
need_extension() {
    compgen -G "python/qgemm/_C*.so" > /dev/null ||
        python3 python/setup.py build_ext --inplace > "$1" 2>&1
}

# Issue 31, in a subshell that keeps NVLink multicast off for everything it
# starts (NCCL, PyTorch, NVSHMEM; examples/ep_moe.py sets the same itself).
# multi-gpu.json: what ep_moe.py writes, threads_ok read off the C test's
# verdict (null when it was skipped); written with ep_ok false if the example
# left no file.
step_multigpu() (
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    local log="$OUT/multigpu.log" json="$OUT/multi-gpu.json" rc=0 gpus threads_ok=null
    need_extension "$log" || { tail -n 15 "$log"; return 1; }
    T build/qgemm_tests gpu_multi_ >> "$log" 2>&1 || rc=1
    grep -q '^\[ PASS \] gpu_multi_threads_own_devices' "$log" && threads_ok=true
    grep -q '^\[ FAIL \] gpu_multi_threads_own_devices' "$log" && threads_ok=false
    # (exit 5: the module skipped itself whole, with one GPU; the reason is in the log)
    PYTHONPATH=python T python3 -m pytest -q -rs tests/python/test_multi_gpu.py >> "$log" 2>&1
    case $? in 0 | 5) ;; *) rc=1 ;; esac
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    [ "$gpus" -gt 2 ] && gpus=2
    [ "$gpus" -lt 1 ] && gpus=1 # no GPU: ep_moe.py says so and fails the step
    rm -f "$json"
    # torchrun, through the python3 that holds torch (--standalone: a free port)
    printf '\n===== torchrun --nproc_per_node=%s examples/ep_moe.py\n' "$gpus" >> "$log"
    PYTHONPATH=python T python3 -m torch.distributed.run --standalone --nproc_per_node="$gpus" \
        examples/ep_moe.py --json "$json" >> "$log" 2>&1 || rc=1
    grep -E '^\[ (PASS|FAIL|SKIP) \]|skipped|passed|failed|^ep_moe.py:|^rank |^\{' "$log" |
        tail -n 40
    python3 - "$json" "$gpus" "$threads_ok" <<'PY' || rc=1
import json, os, sys
path, gpus, threads = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
ran = json.load(open(path)) if os.path.exists(path) else {"ep_ok": False}
rec = {"gpus": ran.get("gpus", gpus), "threads_ok": threads, "ep_ok": ran["ep_ok"],
       "per_gpu_tflops_alone": ran.get("per_gpu_tflops_alone"),
       "per_gpu_tflops_together": ran.get("per_gpu_tflops_together")}
with open(path, "w") as f:
    json.dump(rec, f, indent=1)
print(json.dumps(rec))
PY
    return "$rc"
)

step_peers() {
    # qgemm's columns are null without the extension
    need_extension "$OUT/peers-build.log" || return 1
    if [ -f .peers/env.sh ]; then
        # shellcheck disable=SC1091
        bash .peers/build.sh | tail -n 1 && source .peers/env.sh
    fi
    PYTHONPATH="python${PYTHONPATH:+:$PYTHONPATH}" STEP_TIMEOUT=540 \
        T python3 bench/peers.py --warm-jobs 14 --host --out "$OUT" 2>&1 | tail -n 40
    return "${PIPESTATUS[0]}"
}

step_hostprobe() {
    cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -I"${CUDA_HOME:-/usr/local/cuda}/include" \
        bench/host_probe.c build/libqgemm.a -ldl -lpthread -lm -o build/host_probe || return 1
    T build/host_probe 2>&1 | tee "$OUT/host.log"
    local rc=${PIPESTATUS[0]} s
    for s in 64x7168x2048 128x2112x7168 32x9216x4096 4096x4096x7168; do
        T build/qgemm bench --host --shape "$s" 2>&1 | tee -a "$OUT/host.log" | grep -v "^timing"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    done
    for g in "--shape 2048x4096x2048 --grouped-contiguous 8,256" \
             "--shape 4096x4096x2048 --grouped-masked 6,4096,20"; do
        # shellcheck disable=SC2086
        T build/qgemm bench --host $g 2>&1 | tee -a "$OUT/host.log" | grep -v "^timing"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    done
    return "$rc"
}

step_suite() {
    need_extension "$OUT/suite.log"
    PYTHONPATH=python STEP_TIMEOUT="${SUITE_TIMEOUT:-540}" \
        T python3 bench/deepgemm_suite.py --deepgemm .peers/DeepGEMM --out "$OUT" >> "$OUT/suite.log" 2>&1
    local rc=$?
    grep -E "^== |FAIL|suite through" "$OUT/suite.log" | cut -c1-300 | tail -n 60
    return "$rc"
}

echo "==> machine"
nvidia-smi -L 2>&1 || echo "nvidia-smi: not available"
nvcc --version 2>&1 || "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version 2>&1 || echo "nvcc: not found"
echo "OUT=$OUT QGEMM_CACHE_DIR=$QGEMM_CACHE_DIR steps:$selected"

# Later steps need the binaries: build them even when 'build' was not selected.
if ! wanted build && { [ ! -x build/qgemm ] || [ ! -x build/qgemm_tests ]; }; then
    selected="build $selected"
fi
run_step build
[ -x build/qgemm ] && { echo; build/qgemm info; }
for s in tests memcheck racecheck synccheck check bench json grouped chain python examples multigpu peers suite hostprobe; do
    run_step "$s"
done

printf '\n==> summary (%s)\n' "$SUMMARY"
cat "$SUMMARY"
exit $failed
