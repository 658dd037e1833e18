#!/usr/bin/env bash
# tests/cli.sh -- the command-line tool's argument checks, which need no GPU:
# every bad invocation exits 2 (usage) before it opens the GPU, with a
# one-line message that names the option and what it got; no usable GPU exits
# 3 with one line; per-command --help, --option=value, --json documents and
# the progress line of `qgemm compile`, its --kind kernels (wgrad, k_grouped,
# psum: compiled offline, so NVRTC is needed). Run by `make test`
# after the C tests:  bash tests/cli.sh BUILD_DIR
set -u
qgemm="${1:-build}/qgemm"
[ -x "$qgemm" ] || { echo "tests/cli.sh: $qgemm not built" >&2; exit 1; }
failed=0 passed=0

# expect RC PATTERN ARGS... -- `qgemm ARGS` exits RC and prints PATTERN (a
# fixed string) on stderr.
expect() {
    local want_rc="$1" pattern="$2" err rc
    shift 2
    err=$("$qgemm" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" = "$want_rc" ] && grep -qF -- "$pattern" <<< "$err"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf '[ FAIL ] qgemm %s: exit %s (want %s), stderr: %s (want: %s)\n' "$*" "$rc" \
            "$want_rc" "$err" "$pattern"
    fi
}

# expect_out RC PATTERN ARGS... -- `qgemm ARGS` exits RC and prints PATTERN (a
# fixed string) on stdout; PATTERN "!TEXT": stdout does not hold TEXT.
expect_out() {
    local want_rc="$1" pattern="$2" out rc ok=false
    shift 2
    out=$("$qgemm" "$@" 2>/dev/null)
    rc=$?
    if [ "$rc" = "$want_rc" ]; then
        if [ "${pattern#!}" != "$pattern" ]; then
            grep -qF -- "${pattern#!}" <<< "$out" || ok=true
        else
            grep -qF -- "$pattern" <<< "$out" && ok=true
        fi
    fi
    if $ok; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf '[ FAIL ] qgemm %s: exit %s (want %s), stdout wants: %s\n' "$*" "$rc" "$want_rc" \
            "$pattern"
    fi
}

expect 2 "unknown command 'nonsense'" nonsense
expect 0 "" --help
expect 2 "info: unknown option '--x' (--json)" info --x

# --help: the overview lists the commands, the exit statuses and the
# environment; `qgemm CMD --help` (or `qgemm help CMD`) only CMD's options.
expect_out 0 "'qgemm <command> --help'" --help
expect_out 0 "3 no usable GPU" --help
for var in QGEMM_CACHE_DIR XDG_CACHE_HOME QGEMM_CACHE_MAX_MB QGEMM_NVRTC_DIR QGEMM_JIT_DEBUG \
           QGEMM_JIT_DUMP QGEMM_PRINT_CONFIG; do
    expect_out 0 "  $var " --help
done
expect_out 0 "usage: qgemm check [options]" check --help
expect_out 0 "--quick" check --help
expect_out 0 "!--runs" check --help
expect_out 0 "--progress" check --help
expect_out 0 "!--quick" compile -h
expect_out 0 "--progress" help compile
expect_out 0 "!--prune" bench --help
expect_out 0 "--prune" cache --help
expect_out 0 "!--shape" info --help
expect 2 "help: unknown command 'nope'" help nope
expect 2 "unknown command 'nonsense'" nonsense --help  # --help does not hide it
expect 2 "unknown command 'bogus'" bogus -h
# --config: exactly four fields, none empty
expect 2 "--config wants bm,bn,stages,mc" compile --offline --shape 64x128x128 --config ,,128,128,4,none,
expect 2 "--config wants bm,bn,stages,mc" compile --offline --shape 64x128x128 --config 128,128,4,,none
expect 2 "--config wants bm,bn,stages,mc" compile --offline --shape 64x128x128 --config 128,128,4,none,
# A usage error points at its command's --help, on one line.
expect 2 "check: unknown or incomplete option '--fast' (see qgemm check --help)" check --fast
expect 2 "unknown command 'nonsense' (see qgemm --help)" nonsense

# --option=value is --option value, for every command; a flag takes no value.
expect 2 "check: --seed wants an integer in [0, 2147483647], got '-1'" check --seed=-1
expect 2 "compile: --shape wants MxNxK, got '1x2'" compile --shape=1x2
expect 2 "compile: --shape wants MxNxK, got ''" compile --shape=
expect 2 "bench: --runs wants an integer in [20, 100000], got '3'" bench --runs=3
expect 2 "bench: --flush wants clean or write, got 'dirty'" bench --flush=dirty
expect 2 "check: --quick takes no value, got '--quick=1'" check --quick=1
expect 2 "info: --json takes no value, got '--json=yes'" info --json=yes
expect 2 "cache: --prune takes no value, got '--prune=1'" cache --prune=1

# No usable GPU: exit 3 (not 2, a usage error) and exactly one line on stderr.
# CUDA_VISIBLE_DEVICES= hides any GPU, so this holds on a GPU machine too.
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " check --quick
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " check --json --seed=5
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " check --quick --progress
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " bench --shape 128x128x128
lines=$(CUDA_VISIBLE_DEVICES= "$qgemm" check --quick 2>&1 >/dev/null | wc -l)
if [ "$lines" = 1 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "[ FAIL ] qgemm check without a GPU: $lines lines on stderr (want 1)"; fi
# ... and with --json, one JSON document on stdout saying why (issue 53: stdout was empty).
# json_no_gpu ARGS... -- exit 3, a JSON document with "device_error", one line on stderr.
json_no_gpu() {
    local out err rc
    out=$(CUDA_VISIBLE_DEVICES= "$qgemm" "$@" 2>/dev/null)
    rc=$?
    err=$(CUDA_VISIBLE_DEVICES= "$qgemm" "$@" 2>&1 >/dev/null | wc -l)
    if [ "$rc" = 3 ] && [ "$err" = 1 ] && python3 -m json.tool <<< "$out" >/dev/null 2>&1 &&
        grep -qF '"device_error"' <<< "$out" && grep -qF '"exit_status": 3' <<< "$out"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf '[ FAIL ] qgemm %s without a GPU: exit %s (want 3), %s stderr lines, stdout: %s\n' \
            "$*" "$rc" "$err" "$out"
    fi
}
json_no_gpu check --json --quick
json_no_gpu bench --json --shape 128x128x128
json_no_gpu bench --host --json --shape 128x128x128
CUDA_VISIBLE_DEVICES= expect_out 3 "!{" check --quick   # without --json, nothing on stdout
# Usage errors are still found first, with exit 2, GPU or not.
CUDA_VISIBLE_DEVICES= expect 2 "check: --seed wants" check --seed x

# --json: one JSON document on stdout (python3 -m json.tool parses it whole).
# json_ok WHAT KEY ARGS... -- `qgemm ARGS` exits 0 with a JSON document holding KEY.
json_ok() {
    local what="$1" key="$2" out
    shift 2
    out=$("$qgemm" "$@" 2>/dev/null)
    if [ $? = 0 ] && python3 -m json.tool <<< "$out" >/dev/null 2>&1 && grep -qF "\"$key\"" <<< "$out"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf '[ FAIL ] qgemm %s: not one JSON document with "%s": %s\n' "$*" "$key" "$out"
    fi
}
json_ok "info" device info --json
CUDA_VISIBLE_DEVICES= json_ok "info" device_error info --json
QGEMM_CACHE_DIR='/tmp/a "quoted"\dir' json_ok "info" cache_dir info --json
# A cache directory others can write is not used (issue 53): info says so and why.
shared_dir="$(mktemp -d /tmp/qgemm-cli-shared.XXXXXX)"
chmod 1777 "$shared_dir"
QGEMM_CACHE_DIR="$shared_dir" json_ok "info" cache_dir_error info --json
QGEMM_CACHE_DIR="$shared_dir" expect_out 0 "not used: writable by others (mode 1777" info
QGEMM_CACHE_DIR="$shared_dir" expect_out 0 "not used: writable by others (mode 1777" cache
private_dir="$(mktemp -d /tmp/qgemm-cli-private.XXXXXX)"
QGEMM_CACHE_DIR="$private_dir" expect_out 0 "!not used" info
rm -rf "$shared_dir" "$private_dir"

json_cache="$(mktemp -d /tmp/qgemm-cli-json.XXXXXX)"
QGEMM_CACHE_DIR="$json_cache" json_ok "compile" kernels compile --offline --shape=128x256x512 \
    --grouped-masked 2,256 --dense --json
# ... with a failure in it (a forced, refused tile), exit 1 and still one document.
out=$(QGEMM_CACHE_DIR="$json_cache" "$qgemm" compile --offline --shape 128x256x512 \
      --config 64,64,0,none --refuse 64x64 --json 2>/dev/null)
rc=$?
if [ "$rc" = 1 ] && python3 -m json.tool <<< "$out" >/dev/null 2>&1 && grep -q '"failed": 1' <<< "$out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); printf '[ FAIL ] qgemm compile --json with a failure: exit %s: %s\n' "$rc" "$out"
fi

# compile's progress line (count / total, elapsed) on stderr: with --progress,
# or when stderr is a terminal (script gives it one), not otherwise.
progress_case() { # progress_case WHAT WANT(yes|no) STDERR
    local got=no
    grep -qE 'qgemm compile: \[2/2\] [0-9.]+ s elapsed, compiling masked 256x256x512 G=2' <<< "$3" && got=yes
    if [ "$got" = "$2" ]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); printf '[ FAIL ] compile progress %s: want %s, stderr: %s\n' "$1" "$2" "$3"; fi
}
args=(compile --offline --shape 128x256x512 --grouped-masked 2,256 --dense)
progress_case "--progress" yes "$(QGEMM_CACHE_DIR="$json_cache" "$qgemm" "${args[@]}" --progress 2>&1 >/dev/null)"
progress_case "to a pipe" no "$(QGEMM_CACHE_DIR="$json_cache" "$qgemm" "${args[@]}" 2>&1 >/dev/null)"
if script -qec true /dev/null >/dev/null 2>&1; then # (a pseudo-terminal can be made here)
    progress_case "on a terminal" yes "$(QGEMM_CACHE_DIR="$json_cache" script -qec \
        "$(printf '%q ' "$qgemm" "${args[@]}") >/dev/null" /dev/null 2>&1)"
fi
rm -rf "$json_cache"

# --kind: the training and psum kernels, as Python's compile(kind=...), each
# listed with its kind and G, with the progress line; --accumulate is its own
# kernel (another cache key); the options' misuse exits 2 naming them.
kind_cache="$(mktemp -d)"
out=$(QGEMM_CACHE_DIR="$kind_cache" "$qgemm" compile --offline --kind wgrad --kind k_grouped \
      --kind psum --groups 2 --shape 256x256x1024 --progress 2>"$kind_cache.err")
rc=$?
if [ "$rc" = 0 ] && grep -qE '^ok +psum +256x256x1024 G=2 ' <<< "$out" &&
   grep -qE '^ok +wgrad +256x256x1024 ' <<< "$out" && grep -qE '^ok +k-grouped +256x256x1024 G=2 ' <<< "$out" &&
   grep -q 'qgemm compile: 3 kernels, 0 failed' <<< "$out" &&
   grep -qE 'qgemm compile: \[3/3\] [0-9.]+ s elapsed, compiling k-grouped 256x256x1024 G=2' "$kind_cache.err"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); printf '[ FAIL ] qgemm compile --kind wgrad/k_grouped/psum: exit %s: %s %s\n' "$rc" "$out" "$(cat "$kind_cache.err")"
fi
key_plain=$(QGEMM_CACHE_DIR="$kind_cache" "$qgemm" compile --offline --kind wgrad --shape 256x256x1024 --json 2>/dev/null | sed -n 's/.*"key": "\([0-9a-f]*\)".*/\1/p')
key_acc=$(QGEMM_CACHE_DIR="$kind_cache" "$qgemm" compile --offline --kind wgrad --accumulate --shape 256x256x1024 --json 2>/dev/null | sed -n 's/.*"key": "\([0-9a-f]*\)".*/\1/p')
if [ -n "$key_plain" ] && [ -n "$key_acc" ] && [ "$key_plain" != "$key_acc" ]; then
    passed=$((passed + 1))
else
    failed=$((failed + 1)); printf '[ FAIL ] qgemm compile --kind wgrad [--accumulate]: keys %s / %s\n' "$key_plain" "$key_acc"
fi
rm -rf "$kind_cache" "$kind_cache.err"
expect 2 "compile: --kind wants dense, contiguous, masked, psum, wgrad or k_grouped, got 'fp4'" compile --kind fp4
expect 2 "compile: --kind wgrad given twice" compile --kind wgrad --kind=wgrad
expect 2 "compile: --kind wgrad wants --shape MxNxK" compile --kind wgrad
expect 2 "compile: --kind k_grouped wants --shape MxNxK" compile --kind k-grouped
expect 2 "compile: --kind excludes --grouped-contiguous" compile --kind psum --grouped-contiguous 4
expect 2 "compile: --kind excludes --grouped-contiguous" compile --kind psum --dense
expect 2 "compile: --groups wants G in 1..1024, got '0'" compile --kind psum --groups 0
expect 2 "compile: --groups given twice ('2', then '4')" compile --kind psum --groups 2 --groups 4
expect 2 "compile: --groups needs --kind" compile --groups 2
expect 2 "compile: --accumulate needs --kind" compile --accumulate
expect 2 "compile: --accumulate is for --kind wgrad or k_grouped" compile --kind psum --accumulate
expect 2 "compile: --groups is for the grouped kinds, not dense" compile --kind dense --groups 2
expect_out 0 "--kind KIND" compile --help

# With a GPU (the device machine), check --json's document too.
if "$qgemm" info --json 2>/dev/null | grep -q '"device": {'; then
    json_ok "check" cases check --quick --json --seed 1
    err=$("$qgemm" check --quick --seed 1 --progress 2>&1 >/dev/null)
    if grep -qE '^qgemm check: \[1/[0-9]+\] [0-9.]+ s elapsed, ' <<< "$err"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); printf '[ FAIL ] qgemm check --progress: stderr: %s\n' "$err"; fi
    json_ok "bench --host" c_api_us bench --host-calls 100 --shape 128x256x512 --json --seed 1
    json_ok "bench --host masked" c_api_p90_us bench --host-calls 100 --shape 1x256x512 \
        --grouped-masked 2,64,20 --json --seed 1
else
    echo "tests/cli.sh: no GPU: qgemm check --json and bench --host --json not run (their no-GPU exits are)"
fi

# Conflicting options: one line naming both.
expect 2 "bench: --csv and --json exclude each other" bench --json --csv
expect 2 "bench: --csv and --json exclude each other" bench --csv --shape 64x128x128 --json
# An option that holds one value, given twice: refused, both values named.
expect 2 "check: --seed given twice ('1', then '2')" check --seed 1 --seed=2
expect 2 "bench: --seed given twice ('1', then '2')" bench --seed 1 --seed=2
expect 2 "bench: --runs given twice ('50', then '50')" bench --host --runs 50 --runs 50
expect 2 "bench: --grouped-masked given twice ('2,64', then '4,64')" bench \
    --grouped-masked 2,64 --grouped-masked=4,64
expect 2 "compile: --config given twice ('128,128,4,none', then '64,64,4,a')" compile \
    --config 128,128,4,none --config 64,64,4,a
expect 2 "compile: --grouped-masked given twice ('2,256', then '4,128')" compile \
    --grouped-masked 2,256 --grouped-masked 4,128
expect 2 "compile: --grouped-contiguous given twice ('2', then '2')" compile \
    --grouped-contiguous 2 --grouped-contiguous=2
expect 2 "check: --seed wants an integer in [0, 2147483647], got '-1'" check --seed -1
expect 2 "check: unknown or incomplete option '--fast'" check --fast
expect 2 "compile: --shape wants MxNxK, got '1x2'" compile --shape 1x2
expect 2 "compile: --grouped-masked wants G,M_max" compile --grouped-masked 3
expect 2 "bench: --runs wants an integer in [20, 100000], got '3'" bench --runs 3
expect 2 "bench: --warmup wants an integer in [3, 100000], got 'x'" bench --warmup x
# A value past the upper bound names both bounds (issue 53: "wants an integer >= 20" for 1000000).
expect 2 "bench: --runs wants an integer in [20, 100000], got '1000000'" bench --runs 1000000
expect 2 "bench: --warmup wants an integer in [3, 100000], got '100001'" bench --warmup 100001
expect 2 "bench: --seed wants an integer in [0, 2147483647], got '2147483648'" bench --seed 2147483648
expect 2 "check: --seed wants an integer in [0, 2147483647], got '2147483648'" check --seed 2147483648
expect 2 "bench: --config wants bm,bn,stages,mc" bench --config 1,2
expect 2 "bench: --flush wants clean or write, got 'dirty'" bench --flush dirty
expect 2 "bench: --chain wants an integer in [2, 16], got '1'" bench --chain 1
expect 2 "bench: unknown or incomplete option '--bogus'" bench --bogus
expect 2 "bench: --grouped-contiguous wants G,M" bench --grouped-contiguous 4
expect 2 "bench: --grouped-contiguous wants G,M" bench --grouped-contiguous 0,256
expect 2 "bench: --grouped-masked wants G,M_max or G,M_max,M" bench --grouped-masked 0,512
expect 2 "got '2,512,0'" bench --grouped-masked 2,512,0
expect 2 "got '2,512,513'" bench --grouped-masked 2,512,513
expect 2 "got '2,512,64,1'" bench --grouped-masked 2,512,64,1
expect 2 "bench: --grouped prints its own tables" bench --grouped --grouped-masked 2,512
expect 2 "bench: --grouped prints its own tables" bench --grouped --grouped-contiguous 4,256
expect 2 "bench: --grouped uses its own tables; drop --shape" bench --grouped --shape 64x128x128
expect 2 "bench: --chain prints its own table" bench --chain 4 --grouped-contiguous 4,256
# --host / --host-calls N (issue 26: the C API's CPU cost per call): a bad count
# or a table it cannot print is a usage error (exit 2), found before the GPU is
# opened; a valid invocation without a GPU exits 3.
expect 2 "bench: --host-calls wants an integer in [100, 10000000], got '5'" bench --host-calls 5
expect 2 "bench: --host-calls wants an integer in [100, 10000000], got 'x'" bench --host-calls=x
expect 2 "bench: --host-calls wants an integer in [100, 10000000], got '-5'" bench --host-calls -5
expect 2 "bench: --host-calls wants an integer in [100, 10000000], got '10000001'" bench \
    --host-calls 10000001
expect 2 "bench: --host-calls wants an integer in [100, 10000000], got '1e4'" bench --host --host-calls 1e4
expect 2 "bench: unknown or incomplete option '--host-calls'" bench --host-calls
expect 2 "bench: --host takes no value, got '--host=1'" bench --host=1
expect 2 "bench: --host and --chain exclude each other: pick one" bench --host --chain 4
expect 2 "bench: --host and --chain exclude each other: pick one" bench --chain 4 --host-calls 100
expect 2 "bench: --host times the --shape list (or its --grouped-contiguous and --grouped-masked tables); drop --grouped" \
    bench --host --grouped
expect 2 "bench: --host writes a table or --json, not --csv" bench --host-calls 1000 --csv
CUDA_VISIBLE_DEVICES= expect 2 "bench: --host-calls wants" bench --host-calls 0 --shape 128x128x128
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " bench --host --shape 128x2112x7168
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " bench --host-calls=200 --json --shape 4096x4096x2048 \
    --grouped-masked 6,4096,20
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " bench --host --shape 2048x4096x2048 --grouped-contiguous 8,256
lines=$(CUDA_VISIBLE_DEVICES= "$qgemm" bench --host --json 2>&1 >/dev/null | wc -l)
if [ "$lines" = 1 ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "[ FAIL ] qgemm bench --host without a GPU: $lines lines on stderr (want 1)"; fi
expect_out 0 "--host-calls N" bench --help
expect 2 "cache: unknown option '--all'" cache --all
expect 2 "cache: --prune and --clear exclude each other" cache --prune --clear

# qgemm cache on a cache of its own: a listing deletes nothing, --prune keeps
# what fits QGEMM_CACHE_MAX_MB (least recently used out first), --clear
# removes every kernel and nothing else.
cache_dir="$(mktemp -d)"
key() { printf '%064d' "$1"; }
head -c 700000 /dev/zero > "$cache_dir/$(key 1).cubin"
head -c 700000 /dev/zero > "$cache_dir/$(key 2).cubin"
touch -d '2 days ago' "$cache_dir/$(key 1).cubin"
echo keep > "$cache_dir/notes.txt"
cache_cmd() { QGEMM_CACHE_DIR="$cache_dir" QGEMM_CACHE_MAX_MB=1 "$qgemm" cache "$@"; }
check_cache() { # check_cache WHAT CONDITION...
    local what="$1"
    shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "[ FAIL ] qgemm cache: $what"; fi
}
out="$(cache_cmd)"
check_cache "listing counts 2 kernels and deletes none" \
    grep -q "kernels:     2 files" <<< "$out"
out="$(cache_cmd --prune)"
check_cache "--prune evicts the older kernel only ($out)" \
    test ! -e "$cache_dir/$(key 1).cubin" -a -e "$cache_dir/$(key 2).cubin"
out="$(cache_cmd --clear)"
check_cache "--clear removes the kernels, not other files ($out)" \
    test ! -e "$cache_dir/$(key 2).cubin" -a -e "$cache_dir/notes.txt"
# a cache with no kernel left (the listing sorts none: under make sanitize, UBSan
# stopped it at qsort(NULL, 0))
out="$(cache_cmd --clear 2>&1)" && rc=0 || rc=$?
check_cache "--clear again, on no kernel: exit $rc ($out)" test "$rc" = 0
out="$(cache_cmd 2>&1)" && rc=0 || rc=$?
check_cache "listing no kernel: exit $rc ($out)" test "$rc" = 0
# a QGEMM_CACHE_MAX_MB that is no number: the default, said on stdout and stderr
err="$(QGEMM_CACHE_DIR="$cache_dir" QGEMM_CACHE_MAX_MB=' 5' "$qgemm" cache 2>&1 >/dev/null)"
out="$(QGEMM_CACHE_DIR="$cache_dir" QGEMM_CACHE_MAX_MB=abc "$qgemm" cache 2>/dev/null)"
check_cache "an invalid QGEMM_CACHE_MAX_MB is named ($err | $out)" \
    grep -q "QGEMM_CACHE_MAX_MB=' 5' is not a number of MiB" <<< "$err"
check_cache "... and the default said to apply ($out)" \
    grep -q "limit:       1024 MiB (default; QGEMM_CACHE_MAX_MB ignored)" <<< "$out"
rm -rf "$cache_dir"

# Option values the parser cannot hold are refused, never truncated (issue 27):
# 59 zeros then "4,256x" used to be cut at 63 characters to "0..04,25" and accepted.
long="$(printf '0%.0s' $(seq 59))4,256x"
expect 2 "compile: --grouped-masked wants G,M_max" compile --grouped-masked "$long"
expect 2 "bench: --grouped-masked wants G,M_max or G,M_max,M" bench --grouped-masked "$long"
expect 2 "bench: --grouped-contiguous wants G,M" bench --grouped-contiguous "$long"
expect 2 "bench: --grouped-masked wants G,M_max or G,M_max,M" bench --grouped-masked "2,512,$(printf '0%.0s' $(seq 56))64x"
expect 2 "compile: --grouped-masked wants G,M_max" compile --grouped-masked "2,99999999999999999999999"
expect 2 "compile: --grouped-masked wants G,M_max" compile --grouped-masked "2,256,"
expect 2 "compile: --grouped-masked wants G,M_max" compile --grouped-masked ",256"
expect 2 "compile: --shape wants MxNxK" compile --shape "128x256x$(printf '9%.0s' $(seq 40))"
expect 2 "bench: --seed wants an integer in [0, 2147483647], got '99999999999999999999999'" bench --seed 99999999999999999999999
expect 2 "bench: --config wants bm,bn,stages,mc" bench --config "128,128,4,$(printf 'a%.0s' $(seq 200))"

# `qgemm compile` without --config lets the library choose (issue 27): where
# the JIT refuses the heuristic's tile, the next one ranked is compiled, as in
# a GEMM call. --refuse BMxBN injects that refusal (qgtk_refuse_tile); the
# command used to force the heuristic's configuration and fail.
cache="$(mktemp -d /tmp/qgemm-cli-cache.XXXXXX)"
out=$(QGEMM_CACHE_DIR="$cache" "$qgemm" compile --offline --shape 128x256x512 2>/dev/null)
tile=$(sed -n 's/^ok .* bm *\([0-9]*\) bn *\([0-9]*\) .*/\1x\2/p' <<< "$out")
out=$(QGEMM_CACHE_DIR="$cache" "$qgemm" compile --offline --shape 128x256x512 --refuse "$tile" 2>&1)
if [ -n "$tile" ] && grep -q "^ok " <<< "$out" && ! grep -q "bm *${tile%x*} bn *${tile#*x} " <<< "$out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    printf '[ FAIL ] qgemm compile with the heuristic tile %s refused: %s\n' "$tile" "$out"
fi
expect 2 "compile: --refuse wants BMxBN" compile --refuse 128
# A forced configuration that is refused stays refused (no fallback).
out=$(QGEMM_CACHE_DIR="$cache" "$qgemm" compile --offline --shape 128x256x512 --config "${tile%x*},${tile#*x},0,none" --refuse "$tile" 2>/dev/null)
rc=$?
if [ "$rc" = 1 ] && grep -q "^FAIL .*kernel compilation failed" <<< "$out"; then
    passed=$((passed + 1))
else
    failed=$((failed + 1))
    printf '[ FAIL ] qgemm compile --config %s --refuse %s: exit %s: %s\n' "$tile" "$tile" "$rc" "$out"
fi
rm -rf "$cache"

# --family (issues 49-51): check, bench and compile cover the BF16 GEMMs, the
# indexer (MQA logits, paged MQA logits, HC prenorm) and the casts beside FP8.
# Help: each command names the families and the family options.
expect_out 0 "--family F" check --help
expect_out 0 "bf16, mqa, paged-mqa, hc, cast, or all (the default)" check --help
expect_out 0 "SQxSKVxHxD" bench --help
expect_out 0 "BxNxHxDxL" bench --help
expect_out 0 "--cast per-token|per-block|per-channel|silu-mul" bench --help
expect_out 0 "--layout nt|nn|tn|tt" bench --help
expect_out 0 "--family F" compile --help
expect_out 0 "!--family" info --help
# Unknown families, in every command and every form (a list, --family=).
expect 2 "check: --family wants fp8, bf16, mqa, paged-mqa, hc, cast or all (or a comma list of them), got 'fp4'" check --family fp4
expect 2 "check: --family wants fp8, bf16, mqa, paged-mqa, hc, cast or all (or a comma list of them), got 'bf16,,hc'" check --family bf16,,hc
expect 2 "got 'bf16,'" check --family=bf16,
expect 2 "got 'BF16'" check --family BF16
expect 2 "check: unknown or incomplete option '--family'" check --family
expect 2 "bench: --family wants fp8, bf16, mqa, paged-mqa, hc, cast, got 'gemm'" bench --family gemm
expect 2 "bench: --family wants fp8, bf16, mqa, paged-mqa, hc, cast, got 'all'" bench --family all
expect 2 "bench: --family given twice ('hc', then 'cast')" bench --family hc --family=cast
expect 2 "compile: --family wants fp8, bf16, mqa, paged-mqa, hc, cast, got 'indexer'" compile --family indexer
expect 2 "compile: --family given twice ('hc', then 'mqa')" compile --family hc --family mqa
# Each family's --shape: its form, the fields' meaning, both bounds of each, the text.
expect 2 "bench: --shape for --family bf16 wants MxNxK (M, N (a multiple of 8), K; each in [1, 1048576] x [8, 1048576] x [1, 1048576]), got '64x2112'" bench --family bf16 --shape 64x2112
expect 2 "bench: --shape 64x2100x7168: N must be a multiple of 8, got 2100" bench --family bf16 --shape 64x2100x7168
expect 2 "bench: --shape for --family mqa wants SQxSKVxHxD (queries, keys, heads (32 or 64), head dim (32, 64 or 128); each in [1, 131072] x [1, 1048576] x [32, 64] x [32, 128]), got '2048x65536x128x128'" bench --family mqa --shape 2048x65536x128x128
expect 2 "bench: --shape for --family mqa: heads must be 32 or 64 and the head dim 32, 64 or 128, got 48 and 64" bench --family mqa --shape 8x64x48x64
expect 2 "bench: --shape for --family paged-mqa wants BxNxHxDxL (batch, next_n (1 or 2), heads (32 or 64), head dim (32, 64 or 128), average context length; each in [1, 65536] x [1, 2] x [32, 64] x [32, 128] x [1, 1048576]), got '64x3x64x128x4096'" bench --family paged-mqa --shape 64x3x64x128x4096
expect 2 "bench: --shape for --family hc wants MxNxK (M, N (8, 16, 24 or 32), K (a multiple of 64); each in [1, 1048576] x [8, 32] x [64, 1048576]), got '8192x40x28672'" bench --family hc --shape 8192x40x28672
expect 2 "bench: --shape 8192x24x100: HC wants N in {8, 16, 24, 32} and K a multiple of 64" bench --family hc --shape 8192x24x100
expect 2 "bench: --shape for --family cast wants MxK (rows, columns (per-channel: rows a multiple of 128); each in [1, 1048576] x [1, 1048576]), got '4096x7168x1'" bench --family cast --shape 4096x7168x1
expect 2 "bench: --shape for --family cast wants MxK" bench --family cast --shape 0x7168
expect 2 "bench: --cast per-channel wants rows a multiple of 128, got 100" bench --family cast --cast per-channel --shape 100x256
expect 2 "compile: --shape for --family hc wants MxNxK" compile --family hc --shape 1x2x3x4
# Family options: each for its families only, values named with what they may be.
expect 2 "bench: --layout is for --family bf16, not cast" bench --family cast --layout nt
expect 2 "bench: --splits is for --family hc, not bf16" bench --family bf16 --splits 2
expect 2 "bench: --clean is for --family mqa or paged-mqa, not hc" bench --family hc --clean
expect 2 "bench: --out is for --family bf16, mqa or paged-mqa, not cast" bench --family cast --out bf16
expect 2 "bench: --ue8m0 is for --family cast, not mqa" bench --family mqa --ue8m0
expect 2 "bench: --layout wants nt, nn, tn or tt, got 'NT'" bench --family bf16 --layout NT
expect 2 "bench: --out wants bf16 or fp32, got 'fp8'" bench --family mqa --out fp8
expect 2 "bench: --in wants bf16 or fp32, got 'fp16'" bench --family cast --in fp16
expect 2 "bench: --cast wants per-token, per-block, per-channel or silu-mul, got 'per-row'" bench --family cast --cast per-row
expect 2 "bench: --splits wants an integer in [1, 65536], got '0'" bench --family hc --splits 0
expect 2 "bench: --splits wants an integer in [1, 65536], got '65537'" bench --family hc --splits 65537
expect 2 "bench: --runs wants an integer in [20, 100000], got '19'" bench --family hc --runs 19
expect 2 "bench: --runs wants an integer in [20, 100000], got '100001'" bench --family hc --runs 100001
expect 2 "bench: --warmup wants an integer in [3, 100000], got '2'" bench --family cast --warmup 2
expect 2 "bench: --seed wants an integer in [0, 2147483647], got '-1'" bench --family bf16 --seed -1
expect 2 "bench: --flush wants clean or write, got 'none'" bench --family mqa --flush none
expect 2 "bench: --runs given twice ('20', then '30')" bench --family hc --runs 20 --runs=30
expect 2 "bench: --family cast writes a table or --json, not --csv" bench --family cast --csv
expect 2 "bench: --ue8m0 takes no value, got '--ue8m0=1'" bench --family cast --ue8m0=1
expect 2 "bench: unknown option '--grouped-masked'" bench --family bf16 --grouped-masked 2,64
expect 2 "compile: --splits is for --family hc, not cast" compile --family cast --splits 2
expect 2 "compile: --splits wants an integer in [1, 65536], got '0'" compile --family hc --splits 0
expect 2 "compile: --splits given twice ('2', then '3')" compile --family hc --splits 2 --splits 3
expect 2 "compile: unknown or incomplete option '--kind' for --family bf16 (--shape MxNxK, --offline, --json)" compile --family bf16 --kind dense
# No GPU: exit 3, one line on stderr, and under --json one document saying why.
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " check --family bf16
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " check --family mqa,paged-mqa --quick
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " bench --family paged-mqa --shape 64x2x64x128x4096
CUDA_VISIBLE_DEVICES= expect 3 "qgemm: no GPU: " bench --family fp8 --shape 128x128x128
json_no_gpu check --json --family all
json_no_gpu check --json --family bf16 --family hc --quick
json_no_gpu bench --json --family bf16 --shape 4096x7168x16384 --layout tn --out fp32
json_no_gpu bench --json --family mqa --shape 2048x65536x64x128 --clean
json_no_gpu bench --json --family hc --splits 16
json_no_gpu bench --json --family cast --cast silu-mul --ue8m0 --in fp32
CUDA_VISIBLE_DEVICES= expect_out 3 "!{" bench --family hc
# compile --family works without a GPU (offline): each family's kernels, one
# line each, none spilling; --json one document.
fam_cache="$(mktemp -d)"
fam_case() { # fam_case FAMILY SHAPE WANT_KERNELS [OPTIONS...]
    local fam="$1" shape="$2" want="$3" out rc
    shift 3
    out=$(QGEMM_CACHE_DIR="$fam_cache" "$qgemm" compile --offline --family "$fam" --shape "$shape" "$@" 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && grep -q "qgemm compile: $want kernels, 0 failed" <<< "$out" &&
       [ "$(grep -c "^ok   $fam " <<< "$out")" = "$want" ] && ! grep -qE "spill [1-9]|spill 0/[1-9]" <<< "$out"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1)); printf '[ FAIL ] qgemm compile --family %s --shape %s: exit %s: %s\n' "$fam" "$shape" "$rc" "$out"
    fi
}
fam_case hc 77x16x64 1 --splits 3
fam_case mqa 5x77x32x64 6
fam_case paged-mqa 3x2x64x128x100 5
fam_case cast 256x300 12
fam_case bf16 129x264x320 8
out=$(QGEMM_CACHE_DIR="$fam_cache" "$qgemm" compile --offline --family=hc --shape 13x24x1024 --json 2>/dev/null)
if python3 -m json.tool <<< "$out" >/dev/null 2>&1 && grep -q '"family": "hc"' <<< "$out" &&
   grep -q '"failed": 0' <<< "$out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); printf '[ FAIL ] qgemm compile --family hc --json: %s\n' "$out"; fi
rm -rf "$fam_cache"
# With a GPU (the device machine): every family's quick check, and one bench row each.
if "$qgemm" info --json 2>/dev/null | grep -q '"device": {'; then
    json_ok "check --family all --quick" paged-mqa check --family all --quick --json --seed 1
    json_ok "bench --family bf16" tflops bench --family bf16 --shape 256x512x1024 --json --seed 1
    json_ok "bench --family hc" gbps bench --family hc --shape 512x24x7168 --json --seed 1
fi

printf '[ %s ] cli: %d passed, %d failed\n' "$([ $failed = 0 ] && echo PASS || echo FAIL)" \
    "$passed" "$failed"
[ "$failed" = 0 ]
