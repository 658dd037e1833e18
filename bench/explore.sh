#!/usr/bin/env bash
# bench/explore.sh -- one device run of tuning experiments (qgemm alone, no
# cuBLASLt): each line of the plan times one kernel variant. Output goes to
# $OUT/explore.txt; Nsight Compute summaries of selected kernels to $OUT/ncu.txt.
#     OUT=dir bash bench/explore.sh PLAN
# PLAN lines:  ENV=VAL... | SHAPES | CONFIG      (CONFIG "auto" = the heuristic)
#              ncu ENV=VAL... | SHAPE | CONFIG    (profile that kernel once)
#              sass ENV=VAL... | SHAPE | CONFIG   (per-instruction stall samples -> sass.tar.gz;
#                                                  bench/sass-summary.py reads them)
# ENV may be "-" for none. Needs build/qgemm (built here if missing).
set -u
plan="$1"
OUT="${OUT:-/tmp/qgemm-explore}"
mkdir -p "$OUT"
export QGEMM_CACHE_DIR="${QGEMM_CACHE_DIR:-/tmp/qgemm-cache}"
[ -x build/qgemm ] || make -j16 > /dev/null 2>&1 || { echo "build failed"; exit 1; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/explore.txt"
git log -1 --format='commit %h %s' 2>/dev/null | tee -a "$OUT/explore.txt"
# run_bench ENVS [PROFILER ARGS...] -- `qgemm bench` on the current line's
# shapes and config, under the environment ENVS and an optional profiler.
run_bench() {
    local envs="$1"
    shift
    # shellcheck disable=SC2086
    env $envs timeout 300 "$@" build/qgemm bench "${args[@]}" --no-cublas --runs 20
}
NCU_ONE=("$NCU" --clock-control none -k regex:qg_fp8_gemm --launch-skip 3 --launch-count 1)
nsrc=0
while IFS='|' read -r envs shapes cfg; do
    envs=$(echo "$envs" | xargs); shapes=$(echo "$shapes" | xargs); cfg=$(echo "$cfg" | xargs)
    [ -z "$envs" ] || [ "${envs:0:1}" = "#" ] && continue
    mode=time
    case "${envs%% *}" in
    ncu|sass) mode=${envs%% *}; envs=$(echo "${envs#"$mode"}" | xargs) ;;
    esac
    [ "$envs" = "-" ] && envs=""
    args=()
    for s in ${shapes//,/ }; do args+=(--shape "$s"); done
    [ "$cfg" = auto ] || args+=(--config "$cfg")
    case "$mode" in
    sass)
        # Per-instruction warp-stall samples of the kernel (SASS), as CSV.
        nsrc=$((nsrc + 1))
        mkdir -p "$OUT/sass"
        { echo "# [$envs] $shapes $cfg"
          run_bench "$envs" "${NCU_ONE[@]}" --section SourceCounters --section WarpStateStats \
            --import-source no --page source --csv --print-source sass 2>&1; } > "$OUT/sass/$nsrc.csv"
        ;;
    ncu)
        echo "== ncu [$envs] $shapes $cfg" | tee -a "$OUT/ncu.txt"
        run_bench "$envs" "${NCU_ONE[@]}" --section SpeedOfLight --section MemoryWorkloadAnalysis \
            --section WarpStateStats --section SchedulerStats --section SourceCounters \
            --section LaunchStats --metrics "gpu__time_duration.sum${NCU_METRICS:+,$NCU_METRICS}" \
            >> "$OUT/ncu.txt" 2>&1
        echo "rc=$?" >> "$OUT/ncu.txt"
        ;;
    time)
        echo "== [$envs] $cfg" >> "$OUT/explore.txt"
        run_bench "$envs" 2>&1 | grep -E "^[0-9]+x|rror" | grep -vE " (compiled|disk|memory) " \
            >> "$OUT/explore.txt"
        ;;
    esac
done < "$plan"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv >> "$OUT/explore.txt"
[ -d "$OUT/sass" ] && tar -C "$OUT" -czf "$OUT/sass.tar.gz" sass && rm -rf "$OUT/sass"
cat "$OUT/explore.txt"
