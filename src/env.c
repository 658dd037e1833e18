/*
 * env.c -- every environment variable the library reads, in one table, and
 * the only getenv() in src/. Values are read at every call (cheap), so tests
 * and long-lived processes can change them; nothing is cached.
 *
 *   name                default              what it does
 *   QGEMM_CACHE_DIR     $XDG_CACHE_HOME/qgemm, then $HOME/.cache/qgemm
 *                                            directory of the on-disk kernel cache (created
 *                                            when missing); with none of the three set there
 *                                            is no disk cache, only the in-memory one
 *   QGEMM_CACHE_MAX_MB  1024                 the disk cache's size limit in MiB: after each
 *                                            write the least recently used kernels are
 *                                            deleted until it fits (0: no limit)
 *   XDG_CACHE_HOME      (unset)              an absolute path: the default of QGEMM_CACHE_DIR
 *                                            is $XDG_CACHE_HOME/qgemm (a relative one is
 *                                            ignored, as the XDG spec says)
 *   HOME                (the system's)       without XDG_CACHE_HOME, the default of
 *                                            QGEMM_CACHE_DIR is $HOME/.cache/qgemm
 *   QGEMM_JIT_DEBUG     off                  1: print each compile, cache hit and cache-file
 *                                            problem to stderr ("qgemm jit: ..."), and compile
 *                                            with -lineinfo (its own cache keys)
 *   QGEMM_JIT_DUMP      off                  a directory: write <key>.cu when the memory cache
 *                                            misses and <key>.ptx when NVRTC runs
 *   QGEMM_PRINT_CONFIG  off                  1: print each configuration the heuristic
 *                                            chooses, and each fallback, to stderr
 *   QGEMM_HC_MODE       (unset: rounder)     how tf32_hc_prenorm_gemm rounds B to TF32 (A/B
 *                                            measurements): inplace, rounder, split or trunc
 *                                            (trunc: no rounding, fails DeepGEMM's 1e-8),
 *                                            optionally ":N" converter warps (1-3; the
 *                                            variant's cwN overrides it); another
 *                                            value fails the call with a message naming it
 *   QGEMM_HC_VARIANT    acc4+fit+cw4         tf32_hc_prenorm_gemm's planner options (A/B
 *                                            measurements): '+'-separated base (none: the
 *                                            plan before 2026-11-28), acc2 / acc4 /
 *                                            acc8 (accumulator sets), fit (clusters that fit one
 *                                            wave), w1 / w2 (math warpgroups), k2 / k4 (K
 *                                            blocks a clustered CTA keeps), cw2 / cw3 / cw4
 *                                            (converter warps rounding B; cw4: 3 beside two
 *                                            math warpgroups); another token
 *                                            fails the call with a message naming it
 *   QGEMM_PMQA_VARIANT  (unset: split4r112u) the paged MQA logits kernel's organisation (A/B
 *                                            measurements): shared2 (2 math warpgroups, one
 *                                            kv ring), dual2 (shared2 at 2 CTAs an SM),
 *                                            split4 (4 math warpgroups, a producer warp
 *                                            and kv ring each, weights from L1),
 *                                            split4r112w (split4, all weights in
 *                                            registers at setmaxnreg 32 / 112),
 *                                            split4r112x (split4r112w with the run loop:
 *                                            one compare a unit, issue 50),
 *                                            split4r112p (split4r112x, the producers'
 *                                            unit from one shared base) or
 *                                            split4r112u (split4r112p, the walk's
 *                                            control values from lane 0: uniform
 *                                            stage and descriptors), each optionally
 *                                            followed by ":sS" (S kv stages, the ring's
 *                                            depth: at most what fits, 24, a multiple
 *                                            of the math warpgroups; split4r112u
 *                                            plans 12, the others all that fit); another
 *                                            value (the removed shared4, shared2s,
 *                                            shared4s, dual2s, shared3, split4r,
 *                                            split4r112, split4r112m, split4r112y,
 *                                            pipe2 too) fails the
 *                                            call with a message naming it
 *   QGEMM_MQA_VARIANT   (unset: deep4)       the ragged MQA logits kernel's organisation (A/B
 *                                            measurements): pipe (2 math warpgroups, two
 *                                            accumulator sets), deep4 (DeepGEMM's 4 math
 *                                            warpgroups at setmaxnreg 32 / 112, each q
 *                                            block's weights and ranges staged in shared
 *                                            memory by the producer warp: bitwise pipe's
 *                                            logits), deep4l (deep4, the math loading them
 *                                            itself) or lockstep2 (the 2026-11-28 path);
 *                                            another value fails the call naming it
 *   QGEMM_BMK_RADIX     2                    the radix of the reduced batch sum's tree
 *                                            (qg_bf16_gemm_batch_sum, einsum 'bmk,bnk->mn';
 *                                            A/B measurements): 2, 4 or 8; another value
 *                                            fails the call with a message naming it
 *   QGEMM_BF16_PLAN     v3                   the BF16 GEMMs' configuration (A/B measurements,
 *                                            tests): v3 (the current heuristic), v2 (before
 *                                            B multicast in the m-grouped layouts), v1 (before
 *                                            it mirrored DeepGEMM's multicast choice) or a
 *                                            forced tile BMxBN[:a|:b]; another value, or a
 *                                            tile the call cannot take, fails the call with
 *                                            a message naming it
 *   QGEMM_BF16_MERGE    auto                 merged K stages in the dense NT BF16 GEMM (A/B
 *                                            measurements, tests): off (one 64-K block per
 *                                            stage), auto (DeepGEMM's rule, on grids of
 *                                            <= 0.6 x the SMs' tiles: a tile of one
 *                                            math warpgroup with >= 10 stages merges
 *                                            stages / 5 of them) or n in 1..16 (n 64-K
 *                                            blocks a stage, capped to leave >= 3 stages);
 *                                            other layouts and kinds ignore it; results are
 *                                            bitwise the unmerged kernel's; another value
 *                                            fails the call, naming it
 *   QGEMM_BF16_SPLITK   auto                 split-K across a thread-block cluster in the
 *                                            dense BF16 GEMM (A/B measurements, tests): off
 *                                            (the unsplit kernel, the default before
 *                                            2026-11-29), auto (NT, grids of <= 0.6 x the SMs'
 *                                            tiles, K >= 1024: the split 2 / 4 / 8 and tile
 *                                            of least estimated time, if below 0.85 x the
 *                                            unsplit plan's; H200 2026-11-29: 9 rows at K
 *                                            7168, cuBLAS/qgemm 0.928 -> 0.996) or 2, 4
 *                                            or 8 (that split of the chosen tile, halved
 *                                            until it fits: every CTA of the cluster needs
 *                                            at least one 64-K step, and the partners' sums
 *                                            room in the stages; where even 2 does not fit,
 *                                            e.g. K <= 64, the call runs the unsplit kernel
 *                                            and succeeds (the library prints nothing; a
 *                                            split kernel's QGEMM_JIT_DUMP source defines
 *                                            QG_BF16_SPLITK); partial
 *                                            sums reduced through distributed shared
 *                                            memory in a fixed order (bitwise
 *                                            reproducible); another value fails the call,
 *                                            naming it
 *   QGEMM_BF16_KGROUPED m+d2                 the k-grouped BF16 GEMM's organisation (A/B
 *                                            measurements, tests; issue 49): n (before
 *                                            2026-11-29: tiles walked in groups of n-blocks,
 *                                            no multicast), m (DeepGEMM's walk, groups of 8 or
 *                                            16 m-blocks), mc (m and B multicast over pairs
 *                                            of m-blocks where the m-block count is even)
 *                                            or dg (DeepGEMM's rule: mc at <= 4 groups,
 *                                            else m), each optionally +d2 (the FP32 output
 *                                            tile in shared memory halved, two epilogue
 *                                            rounds, its bytes to the stages; d2 alone: the
 *                                            n walk); the same tile and D bitwise in
 *                                            every mode; another value fails the call,
 *                                            naming it
 *   QGEMM_BMK_REDUCE    atomic               how the reduced batch sum adds its splits:
 *                                            atomic (FP32 vector reductions, one level, as
 *                                            DeepGEMM; not bitwise deterministic) or tree
 *                                            (QGEMM_BMK_RADIX's fixed tree: deterministic);
 *                                            another value fails the call, naming it
 *   QGEMM_BMK_VARIANT   v5:s4                the reduced batch sum's organisation (A/B
 *                                            measurements): v1 (before 2026-11-28), v2 (a bf16 D's last
 *                                            arrival loads its region's sums at once) or
 *                                            v3 (and 16-byte reductions) or v4 (v3; a
 *                                            bf16 D summed as an FP32 D into the workspace,
 *                                            then a second launch converts it), v5 (v4 and
 *                                            the reductions' target prefetched into L2) or
 *                                            v6 (v3 and that prefetch),
 *                                            optionally :sN (the atomic reduction's
 *                                            stages capped at N, 4..16); another value
 *                                            fails the call, naming it
 *   QGEMM_EINSUM_VARIANT old                 read by the Python package (qgemm.einsum,
 *                                            fp8_einsum), not by the library (A/B runs,
 *                                            issue 49): old, new (both options) or a
 *                                            '+'-list of sfkernel (fp8_einsum's x scales
 *                                            made M-major by qgemm's transpose kernel,
 *                                            not torch's copy) and bf16cast (bmk,bnk->mn
 *                                            with a bf16 d: the FP32 sum into a scratch,
 *                                            then torch's cast, as DeepGEMM); another
 *                                            value raises ValueError
 *   QGEMM_CAST_VARIANT  all+lean+ring+lut    the quantizing casts (A/B runs, issue 51): base
 *                                            (grid-stride grids capped at what the SMs
 *                                            hold at once, the plain kernels) or a
 *                                            '+'-list of all (a CTA per unit of work),
 *                                            lean (QG_CAST_LEAN: the same bytes, fewer
 *                                            instructions an element), ring (per-channel
 *                                            through a shared-memory ring of bulk copies)
 *                                            and lut (silu_mul's silu from a shared-memory
 *                                            table), optionally with the Python extension's
 *                                            host word checked (no fast path: the casts
 *                                            take python/qgemm/cast.py's checked path);
 *                                            checked alone keeps the default kernels;
 *                                            another value fails the call, naming it
 *   QGEMM_FP8OUT_SPLIT  on                   whether the e4m3-D heuristic may split a scale
 *                                            group over a cluster (64-/32-column tiles)
 *   QGEMM_FP8OUT_VARIANT (unset: new+epi+last+nk+swm64) the e4m3-D split tiles' organisation (A/B runs,
 *                                            issue 51): a '+'-separated list of old,
 *                                            room (the heuristic counts the clusters of 4
 *                                            the launch finds resident), early (the
 *                                            producer starts before the cluster barrier, no exit barrier),
 *                                            sfbpf (the TMA lane prefetches its first
 *                                            tile's SFB into L2 first), new (all
 *                                            three), epi (the cheaper e4m3 epilogue:
 *                                            the same bytes, not in new) or last (with
 *                                            early: the exchange's release at a tile's
 *                                            end, none on the last; not in new), nk (dense
 *                                            split tiles with split-K 2 too, clusters of 8
 *                                            or 4: N 576; not in new); and the SwiGLU
 *                                            calls' heuristic words (swm64 in the
 *                                            default; a list replaces the default, so
 *                                            new+epi+last+nk+swmca drops swm64):
 *                                            swm64 (64x256 for masked groups of <= 64
 *                                            rows), swmca (masked 128x256 with A
 *                                            multicast from 2.5 waves), swmcac (the same,
 *                                            contiguous); the e4m3 calls ignore them, the
 *                                            SwiGLU calls the others; another value fails
 *                                            the call, naming it
 *   QGEMM_FP8_GROUPED_MCB (device)           whether the FP8 heuristic may pick B multicast
 *                                            in the contiguous, masked and psum kinds
 *                                            (bf16 D; issue 52): a flag; unset, on for
 *                                            HBM3e-class devices (H200: timed there), off
 *                                            on the H100 (not timed there)
 *   QGEMM_FP8_HEUR      notall+nomcb         alternatives to the FP8 heuristic's choice (A/B
 *                                            runs, issue 52): a '+'-separated list of none
 *                                            (or base: the heuristic before notall and nomcb
 *                                            became the default, H200 2026-11-29), default
 *                                            (notall+nomcb), notall (masked / psum at K >=
 *                                            6144: 128x192 B instead of the tall 256x128 A where grouped
 *                                            B is allowed), nomcb (no grouped B for groups
 *                                            of <= 512 expected rows at K < 6144), nomcbc
 *                                            (no grouped B in the contiguous kind where
 *                                            groups average <= 512 rows); forced
 *                                            configurations ignore it;
 *                                            another value fails the call, naming it
 *   QGEMM_NVRTC_DIR     (unset)              a directory holding libnvrtc.so.* (e.g. the pip
 *                                            package nvidia-cuda-nvrtc's lib/), tried first
 *                                            when NVRTC is loaded (src/nvrtc.c)
 *   CUDA_HOME           /usr/local/cuda      NVRTC is then looked for in $CUDA_HOME/lib64 and
 *                                            lib, then through the system loader
 *
 * The NVRTC variables are read once, at the first compile of the process (NVRTC
 * is loaded once); the others at every call.
 *
 * A flag (QGEMM_JIT_DEBUG, QGEMM_PRINT_CONFIG) reads the usual words, in any
 * case: 1, true, on, yes turn it on; 0, false, off, no (or empty, or unset)
 * leave it off; any other value is refused: off, and named once on stderr
 * (the user set a debug switch, so a line there is what they asked for;
 * issue 53: "false" used to turn debugging on). docs/DESIGN.md §9 copies this
 * table; qg__env_knobs below is the same table for code, and the readers
 * below answer only for names in it (another reads as unset), so a variable
 * cannot be read without being listed here.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const qg_env_knob qg__env_knobs[] = {
    {"QGEMM_CACHE_DIR", "directory of the on-disk kernel cache",
     "$XDG_CACHE_HOME/qgemm, else $HOME/.cache/qgemm"},
    {"QGEMM_CACHE_MAX_MB", "the disk cache's size limit in MiB (least recently used evicted; "
     "0: none)", "1024"},
    {"XDG_CACHE_HOME", "an absolute path: the default of QGEMM_CACHE_DIR is under it", "(unset)"},
    {"HOME", "without XDG_CACHE_HOME, gives the default of QGEMM_CACHE_DIR", "(the system's)"},
    {"QGEMM_JIT_DEBUG", "1/true/on/yes: print compiles and cache hits to stderr, compile with "
     "-lineinfo (0/false/off/no: off; other values refused)", "off"},
    {"QGEMM_JIT_DUMP", "a directory: write <key>.cu and <key>.ptx of each compile", "off"},
    {"QGEMM_PRINT_CONFIG", "1/true/on/yes: print each chosen configuration to stderr "
     "(0/false/off/no: off; other values refused)", "off"},
    {"QGEMM_HC_MODE", "tf32_hc_prenorm_gemm's B rounding: inplace, rounder, split or trunc "
     "(no rounding: fails DeepGEMM's 1e-8), optionally :1..:3 converter warps", "rounder"},
    {"QGEMM_HC_VARIANT", "tf32_hc_prenorm_gemm's planner options: '+'-separated base (none), acc2, acc4, "
     "acc8 (accumulator sets), fit (clusters that fit one wave), w1, w2 (math warpgroups), k2, k4 (the fewest "
     "K blocks a clustered CTA keeps), cw2, cw3, cw4 (converter warps rounding B; cw4 is 3 beside two math "
     "warpgroups)", "acc4+fit+cw4 (split mode: fit+cw4; QGEMM_HC_MODE's :N: no cw word)"},
    {"QGEMM_PMQA_VARIANT", "fp8_paged_mqa_logits' organisation: shared2 (2 math warpgroups, one kv "
     "ring), dual2 (shared2 at 2 CTAs an SM), split4 (4 math warpgroups, a producer warp and ring "
     "each), split4r112w (split4 with the weights in registers) or split4r112x (split4r112w with the "
     "run loop) or split4r112p (split4r112x, the producers' unit from one shared base) or "
     "split4r112u (split4r112p, the walk broadcast from lane 0: uniform stage and descriptors); each "
     "optionally :sS (S kv stages, at most 24; split4r112u plans 12)",
     "split4r112u"},
    {"QGEMM_MQA_VARIANT", "fp8_mqa_logits' organisation: pipe (2 math warpgroups, two accumulator "
     "sets), deep4 (DeepGEMM's 4 math warpgroups, one shared kv ring, setmaxnreg 32 / 112, q's "
     "weights staged by the producer), deep4l (deep4, weights loaded by the math) or lockstep2 (2 "
     "math warpgroups, one set)", "deep4"},
    {"QGEMM_BMK_RADIX", "the reduced batch sum's tree radix (qg_bf16_gemm_batch_sum): 2, 4 or 8",
     "2"},
    {"QGEMM_BF16_PLAN", "the BF16 GEMMs' configuration: v3 (current heuristic), v2 (before branch "
     "gmc), v1 (before branch bf16h) or a forced tile BMxBN[:a|:b]", "v3"},
    {"QGEMM_BF16_MERGE", "merged K stages in the dense NT BF16 GEMM: off (one 64-K block per "
     "stage), auto (DeepGEMM's rule, on grids of <= 0.6 x the SMs' tiles: one-warpgroup tiles with "
     ">= 10 stages merge stages / 5) or n (1..16 64-K blocks per stage where valid)", "auto"},
    {"QGEMM_BF16_SPLITK", "split-K across a thread-block cluster in the dense BF16 GEMM: off (the "
     "unsplit kernel), auto (NT, few tiles, long K: the planner's split and tile) or 2, 4 or 8 "
     "(that split of the chosen tile, halved until it fits; a K too short for a split of 2, e.g. "
     "K <= 64, runs the unsplit kernel without notice)", "auto"},
    {"QGEMM_BF16_KGROUPED", "the k-grouped BF16 GEMM's organisation: n (tiles walked in "
     "groups of n-blocks, no multicast), m (DeepGEMM's walk, groups of m-blocks), mc (m and B "
     "multicast over pairs of m-blocks where legal) or dg (mc at <= 4 groups, else m), each "
     "optionally +d2 (the FP32 output tile halved, its bytes to the pipeline's stages)", "m+d2"},
    {"QGEMM_BMK_REDUCE", "how the reduced batch sum adds its splits (qg_bf16_gemm_batch_sum): "
     "atomic (one level of FP32 atomics, not bitwise deterministic) or tree (deterministic)",
     "atomic"},
    {"QGEMM_BMK_VARIANT", "the reduced batch sum's organisation (qg_bf16_gemm_batch_sum): v1, "
     "v2 (a bf16 D's last arrival loads its region's sums at once), v3 (and 16-byte "
     "reductions) or v4 (v3; a bf16 D summed as an FP32 D into the workspace, then converted "
     "by a second launch), v5 (v4 and the reductions' target prefetched into L2) or v6 (v3 "
     "and that prefetch), optionally :sN (the atomic "
     "reduction's stages capped at N, 4..16)", "v5:s4"},
    {"QGEMM_EINSUM_VARIANT", "(the Python package's einsum / fp8_einsum) old, new (both options) "
     "or a '+'-list of sfkernel (fp8_einsum's x scales made M-major by qgemm's transpose kernel, "
     "not torch's copy) and bf16cast (bmk,bnk->mn with a bf16 d: the FP32 sum into a scratch, "
     "then torch's cast, as DeepGEMM)", "old"},
    {"QGEMM_CAST_VARIANT", "the quantizing casts: base (grid-stride grids capped at what the SMs "
     "hold at once, the plain kernels) or a '+'-list of all (a CTA per unit of work), lean "
     "(the same bytes, fewer instructions an element), ring (per-channel through a shared-memory "
     "ring of bulk copies) and lut (silu_mul's silu of bf16 gates from a shared-memory table), "
     "optionally with the Python casts' host word checked (the checked path, no fast path)",
     "all+lean+ring+lut"},
    {"QGEMM_FP8OUT_SPLIT", "whether the e4m3-D heuristic may split a 1x128 scale group over a "
     "cluster (64- and 32-column tiles): a flag", "on"},
    {"QGEMM_FP8OUT_VARIANT", "the e4m3-D split tiles' organisation: '+'-separated old, room (the "
     "heuristic counts the clusters of 4 the launch finds resident), early (the producer starts "
     "before the cluster barrier), sfbpf (the first tile's SFB prefetched into L2 before the first loads), "
     "new (all three), epi (the cheaper e4m3 epilogue, not in new) or last (with early: the "
     "exchange's release at a tile's end, none on a CTA's last tile; not in new) or nk (dense split "
     "tiles with split-K 2 too, in clusters of 8 or 4; not in new); the SwiGLU calls' swm64 "
     "(64x256 for masked groups of <= 64 rows), swmca (masked 128x256 with A multicast from 2.5 "
     "waves), swmcac (the same, contiguous); swm64 in the default", "new+epi+last+nk+swm64"},
    {"QGEMM_FP8_GROUPED_MCB", "whether the FP8 heuristic may pick B multicast in the contiguous, "
     "masked and psum kinds (bf16 D): a flag", "on for HBM3e devices (H200), off on the H100"},
    {"QGEMM_FP8_HEUR", "alternatives to the FP8 heuristic's choice (A/B runs): '+'-separated none "
     "(or base: no alternative, the heuristic before 2026-11-29), default (notall+nomcb), notall "
     "(masked / psum at K >= 6144: 128x192 B, not the tall 256x128 A), nomcb (no grouped B for "
     "groups of <= 512 expected rows at K < 6144), nomcbc (contiguous groups averaging <= 512 "
     "rows: no grouped B)",
     "notall+nomcb"},
    {"QGEMM_NVRTC_DIR", "a directory holding libnvrtc.so.* (e.g. the pip package's lib/), tried "
     "first", "(unset)"},
    {"CUDA_HOME", "NVRTC is looked for in $CUDA_HOME/lib64 before the system loader",
     "/usr/local/cuda"},
};
const int qg__num_env_knobs = (int)(sizeof qg__env_knobs / sizeof qg__env_knobs[0]);

const char *qg__env_string(const char *name) {
    int i = 0;
    while (i < qg__num_env_knobs && strcmp(qg__env_knobs[i].name, name) != 0) ++i;
    if (i == qg__num_env_knobs) return NULL;
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

int qg__env_next_word(const char **v, const char *seps, bool skip_empty,
                      const char *const names[], int n) {
    while (*v) {
        const char *w = *v;
        const size_t len = strcspn(w, seps);
        *v = w[len] ? w + len + 1 : NULL; /* a separator: a word follows, empty or not */
        if (len == 0 && skip_empty) continue;
        for (int i = 0; i < n; ++i)
            if (strlen(names[i]) == len && !strncmp(w, names[i], len)) return i;
        return -2;
    }
    return -1;
}

/* 1 for an "on" word, 0 for an "off" word, -1 for anything else. */
static int flag_word(const char *v) {
    static const char *const on[] = {"1", "true", "on", "yes"};
    static const char *const off[] = {"0", "false", "off", "no"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, on[i]) == 0) return 1;
        if (strcasecmp(v, off[i]) == 0) return 0;
    }
    return -1;
}

bool qg__env_flag(const char *name) {
    const char *v = qg__env_string(name);
    if (!v) return false;
    const int w = flag_word(v);
    if (w >= 0) return w == 1;
    /* Refused: off, said once per variable and value (read at every call). */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char said[64][128]; /* (one a knob of the table: 64 > qg__num_env_knobs, checked) */
    int i = 0;
    while (i < qg__num_env_knobs && strcmp(qg__env_knobs[i].name, name) != 0) ++i;
    if (i >= (int)(sizeof said / sizeof said[0])) return false;
    pthread_mutex_lock(&lock);
    const bool first = strncmp(said[i], v, sizeof said[i] - 1) != 0;
    if (first) snprintf(said[i], sizeof said[i], "%s", v);
    pthread_mutex_unlock(&lock);
    if (first)
        fprintf(stderr, "qgemm: %s='%.64s%s' is not a switch (1/0, true/false, on/off, yes/no, in "
                "any case): read as off\n", name, v, strlen(v) > 64 ? "..." : "");
    return false;
}

bool qg__cache_dir(char *buf, size_t len) {
    if (!buf || !len) return false;
    buf[0] = '\0';
    const char *dir = qg__env_string("QGEMM_CACHE_DIR");
    const char *xdg = dir ? NULL : qg__env_string("XDG_CACHE_HOME");
    if (xdg && xdg[0] != '/') xdg = NULL; /* the XDG spec: relative paths are invalid */
    const char *home = dir || xdg ? NULL : qg__env_string("HOME");
    int n = dir ? snprintf(buf, len, "%s", dir)
            : xdg ? snprintf(buf, len, "%s/qgemm", xdg)
            : home ? snprintf(buf, len, "%s/.cache/qgemm", home) : -1;
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return false;
    }
    return true;
}

void qg__jit_debug(const char *fmt, ...) {
    if (!qg__env_flag("QGEMM_JIT_DEBUG")) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("qgemm jit: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
