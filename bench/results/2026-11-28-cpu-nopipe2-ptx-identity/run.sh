#!/usr/bin/env bash
# PTX identity of the paged MQA kernels shared2 / shared4 / dual2 across the
# removal of pipe2 (branch nopipe2): every (next_n 1/2) x (H 32/64) x
# (D 32/64/128) x clean 0/1 x bf16 0/1 the planner allows, each variant,
# compiled to PTX (nvcc -ptx -arch=sm_90a, as tools/indexer_compile_check.sh
# compiles) from the JIT source src/indexer_plan.c writes, in two trees:
#   usage: run.sh BASE_TREE NEW_TREE   (e.g. a `git archive main` copy and the branch)
# Normalisation: drop `.loc` / `.file` lines and `//` comment lines. Compares
# per name (pmqa_h.._d.._n.._cln.._bf.._<variant>_st..) and the multisets of
# sha256 of the normalised texts; prints IDENTICAL / DIFFER and exits non-zero
# on any difference. With NVRTC=1 (both trees built: make build/qgemm_tests)
# also the library's own NVRTC path: QGEMM_JIT_DUMP of the test
# pmqa_compile_every_variant in each tree (18 kernels: 6 shapes x 3
# variants; base's pipe2 dumps, QG_PMQA_PIPE 1, left out), same comparison.
set -u
BASE=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/qg-nopipe2-ptx.XXXXXX)}
gen() { # tree outdir
    local tree=$1 out=$2
    mkdir -p "$out"
    cat > "$out/gen.c" <<'CEOF'
#include "indexer_plan.h"
#include <stdio.h>
#include <string.h>
static char buf[65536];
int main(int argc, char **argv) {
    const char *why = "";
    const int hs[] = {32, 64}, ds[] = {32, 64, 128};
    for (int v = 0; v < QG_PMQA_VARIANT_COUNT; ++v) {
        const char *vn = qg__pmqa_variant_name(v);
        if (!vn || !strcmp(vn, "pipe2")) continue; /* removed on nopipe2 */
        for (int nn = 1; nn <= 2; ++nn)
            for (int h = 0; h < 2; ++h)
                for (int d = 0; d < 3; ++d)
                    for (int cl = 0; cl < 2; ++cl)
                        for (int bf = 0; bf < 2; ++bf) {
                            qg_pmqa_plan p;
                            if (qg__pmqa_plan(4096, nn, hs[h], ds[d], cl, bf, 132, &p, &why) ||
                                qg__pmqa_plan_variant(&p, v)) {
                                fprintf(stderr, "skip (planner refuses) %s n%d h%d d%d: %s\n", vn,
                                        nn, hs[h], ds[d], why);
                                continue;
                            }
                            char path[512];
                            snprintf(path, sizeof path, "%s/pmqa_h%d_d%d_n%d_cln%d_bf%d_%s_st%d.cu",
                                     argv[1], p.heads, p.head_dim, p.next_n, p.clean,
                                     p.logits_bf16, vn, p.stages);
                            const int len = qg__pmqa_source(buf, sizeof buf, &p);
                            FILE *f = fopen(path, "w");
                            if (!f || len < 0) return 1;
                            fwrite(buf, 1, (size_t)len, f);
                            fclose(f);
                        }
    }
    return 0;
}
CEOF
    cc -std=c11 -O1 -I"$tree/src" "$out/gen.c" "$tree/src/indexer_plan.c" -o "$out/gen" || exit 1
    mkdir -p "$out/src" "$out/ptx"
    "$out/gen" "$out/src" || exit 1
    for cu in "$out"/src/*.cu; do
        n=$(basename "$cu" .cu)
        { printf '#define int64_t qg_int64_t\n#define uint64_t qg_uint64_t\n'; cat "$cu"; } > "$out/ptx/$n.nvcc.cu"
        echo "nvcc -arch=sm_90a -ptx -std=c++17 -I$tree/kernels -o $out/ptx/$n.ptx $out/ptx/$n.nvcc.cu"
    done > "$out/cmds"
    xargs -P 2 -I{} sh -c '{}' < "$out/cmds" || exit 1
    for p in "$out"/ptx/*.ptx; do
        grep -v -E '^[[:space:]]*\.(loc|file)[[:space:]]|^[[:space:]]*//' "$p" > "${p%.ptx}.norm"
    done
}
gen "$BASE" "$WORK/base"
gen "$NEW" "$WORK/new"
(cd "$WORK/base/ptx" && sha256sum *.norm | sort) > "$WORK/base.sha"
(cd "$WORK/new/ptx" && sha256sum *.norm | sort) > "$WORK/new.sha"
nb=$(wc -l < "$WORK/base.sha"); nn=$(wc -l < "$WORK/new.sha")
echo "base: $nb kernels; new: $nn kernels"
for v in shared2 shared4 dual2; do
    echo "  $v: base $(grep -c "_${v}_" "$WORK/base.sha"), new $(grep -c "_${v}_" "$WORK/new.sha")"
done
rc=0
if diff "$WORK/base.sha" "$WORK/new.sha"; then
    echo "per name: IDENTICAL ($nb of $nb)"
else
    echo "per name: DIFFER"; rc=1
fi
if diff <(cut -d' ' -f1 "$WORK/base.sha" | sort) <(cut -d' ' -f1 "$WORK/new.sha" | sort) >/dev/null; then
    echo "multiset of sha256: IDENTICAL ($(cut -d' ' -f1 "$WORK/base.sha" | sort -u | wc -l) distinct)"
else
    echo "multiset of sha256: DIFFER"; rc=1
fi
if [ "${NVRTC:-0}" = 1 ]; then
    for side in base new; do
        tree=$BASE; [ $side = new ] && tree=$NEW
        mkdir -p "$WORK/nvrtc-$side"
        (cd "$tree" && QGEMM_JIT_DUMP="$WORK/nvrtc-$side" build/qgemm_tests pmqa_compile_every_variant | tail -1)
        for c in "$WORK/nvrtc-$side"/*.cu; do
            grep -q 'QG_PMQA_PIPE 1' "$c" && continue
            grep -v -E '^[[:space:]]*\.(loc|file)[[:space:]]|^[[:space:]]*//' "${c%.cu}.ptx" | sha256sum | cut -d' ' -f1
        done | sort > "$WORK/nvrtc-$side.sha"
    done
    echo "nvrtc: base $(wc -l < "$WORK/nvrtc-base.sha"), new $(wc -l < "$WORK/nvrtc-new.sha") kernels"
    if diff "$WORK/nvrtc-base.sha" "$WORK/nvrtc-new.sha" >/dev/null; then
        echo "nvrtc multiset of sha256: IDENTICAL ($(sort -u "$WORK/nvrtc-new.sha" | wc -l) distinct)"
    else
        echo "nvrtc multiset of sha256: DIFFER"; rc=1
    fi
fi
echo "work dir: $WORK"
exit $rc
