/*
 * compile_families.c -- `qgemm compile --family F` for the families beside
 * the FP8 GEMMs (cli.h): warm the kernel cache with the kernels a family's
 * calls on the --shape list (default: `qgemm bench --family F`'s shapes) run,
 * in every variant a caller picks per call: BF16 dense in the four layouts x
 * D bf16 / FP32; MQA logits plain / clean / compressed x fp32 / bf16 logits;
 * the paged schedule and logits plain / clean x fp32 / bf16; HC prenorm
 * (--splits S, default 1); the casts per-token (row- and M-major scales),
 * per-block, per-channel (rows a multiple of 128), silu-mul, each with bf16
 * input, plain and UE8M0 scales. On the device when there is one, else on an
 * offline H100, as the FP8 compile. Needs no GPU.
 */
#include "cli.h"

#include "qgtk_cases.h"

#include <stdlib.h>
#include <string.h>

/* A fake, aligned device address: the compile entries read shapes, strides
 * and alignments only. */
#define FAKE(x) ((void *)(uintptr_t)(x))

typedef struct {
    bool json;
    int done, failed;
} report;

static void line(report *r, cli_family f, const char *what, qg_status s, const qg_kernel_info *info) {
    static const char *const hit[3] = {"compiled", "memory", "disk"};
    const char *source = info->cache_hit >= 0 && info->cache_hit <= 2 ? hit[info->cache_hit] : "?";
    if (r->json) {
        printf("%s\n    {\"family\": \"%s\", \"kernel\": ", r->done ? "," : "", cli_family_name(f));
        cli_json_string(stdout, what);
        printf(", \"ok\": %s", s == QG_SUCCESS ? "true" : "false");
        if (s != QG_SUCCESS) {
            printf(", \"status\": \"%s\", \"error\": ", qg_status_string(s));
            cli_json_string(stdout, qg_last_error());
        } else {
            printf(", \"registers\": %d, \"spill_store_bytes\": %d, \"spill_load_bytes\": %d, "
                   "\"stack_frame_bytes\": %d, \"compile_ms\": %.1f, \"source\": \"%s\", \"key\": ",
                   info->registers, info->spill_store_bytes, info->spill_load_bytes,
                   info->stack_frame_bytes, info->compile_ms, source);
            cli_json_string(stdout, info->key);
        }
        printf("}");
    } else if (s != QG_SUCCESS) {
        printf("FAIL %-9s %-44s %s: %s\n", cli_family_name(f), what, qg_status_string(s),
               qg_last_error());
    } else {
        printf("ok   %-9s %-44s regs %3d spill %d/%d stack %d  %8.1f ms  %-8s %s\n",
               cli_family_name(f), what, info->registers, info->spill_store_bytes,
               info->spill_load_bytes, info->stack_frame_bytes, info->compile_ms, source, info->key);
    }
    fflush(stdout);
    r->done++;
    r->failed += s != QG_SUCCESS;
}

static void bf16_kernels(qg_context *ctx, const long *s, report *r) {
    for (int layout = 0; layout < 4; layout++)
        for (int fp32 = 0; fp32 < 2; fp32++) {
            qg_bf16_gemm_args a;
            memset(&a, 0, sizeof a);
            a.m = (int)s[0], a.n = (int)s[1], a.k = (int)s[2], a.num_groups = 1;
            a.a_major = layout >= 2 ? QG_MAJOR_MN : QG_MAJOR_K;
            a.b_major = layout % 2 ? QG_MAJOR_MN : QG_MAJOR_K;
            a.d_fp32 = fp32;
            /* the smallest 16-byte multiple strides (in elements) */
            a.lda = ((a.a_major == QG_MAJOR_K ? s[2] : s[0]) + 7) / 8 * 8;
            a.ldb = ((a.b_major == QG_MAJOR_K ? s[2] : s[1]) + 7) / 8 * 8;
            a.ldd = (s[1] + 7) / 8 * 8;
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            char what[96];
            snprintf(what, sizeof what, "dense %s %ldx%ldx%ld %s",
                     qgtk_bf16_layout_name(a.a_major, a.b_major), s[0], s[1], s[2],
                     fp32 ? "fp32" : "bf16");
            line(r, CLI_FAMILY_BF16, what, qg_bf16_compile(ctx, QG_GEMM_DENSE, &a, &info), &info);
        }
}

static void mqa_kernels(qg_context *ctx, const long *s, report *r) {
    static const char *const modes[3] = {"plain", "clean", "compressed"};
    for (int mode = 0; mode < 3; mode++)
        for (int bf = 0; bf < 2; bf++) {
            qg_mqa_logits_args a;
            memset(&a, 0, sizeof a);
            a.seq_len = (int)s[0], a.seq_len_kv = (int)s[1], a.heads = (int)s[2];
            a.head_dim = (int)s[3], a.ld_kv = s[3], a.ld_weights = s[2];
            a.clean = mode == 1, a.max_seqlen_k = mode == 2 ? (int)s[1] : 0;
            a.logits_bf16 = bf;
            a.ld_logits = (s[1] + 15) / 16 * 16;
            qg_kernel_info info;
            memset(&info, 0, sizeof info);
            char what[96];
            snprintf(what, sizeof what, "sq %ld skv %ld H %ld D %ld %s %s", s[0], s[1], s[2], s[3],
                     modes[mode], bf ? "bf16" : "fp32");
            line(r, CLI_FAMILY_MQA, what, qg_indexer_compile(ctx, QG_INDEXER_MQA_LOGITS, &a, &info),
                 &info);
        }
}

static void paged_kernels(qg_context *ctx, const long *s, report *r) {
    for (int v = -1; v < 4; v++) { /* -1: the schedule; then clean x bf16 */
        qg_paged_mqa_logits_args a;
        memset(&a, 0, sizeof a);
        a.batch = (int)s[0], a.next_n = (int)s[1], a.heads = (int)s[2], a.head_dim = (int)s[3];
        a.ld_weights = s[2];
        a.max_context_len = (int)((s[4] * 13 / 10 + 2 + 63) / 64 * 64);
        a.num_blocks = (int)(s[0] * (a.max_context_len / 64)) + 1;
        a.block_table_ld = a.max_context_len / 64 + 1;
        a.ld_logits = (a.max_context_len + 15) / 16 * 16;
        a.clean = v >= 0 && (v & 1), a.logits_bf16 = v >= 0 && (v >> 1);
        qg_kernel_info info;
        memset(&info, 0, sizeof info);
        char what[96];
        if (v < 0) snprintf(what, sizeof what, "schedule bsz %ld next_n %ld", s[0], s[1]);
        else
            snprintf(what, sizeof what, "bsz %ld next_n %ld H %ld D %ld L %ld%s %s", s[0], s[1],
                     s[2], s[3], s[4], a.clean ? " clean" : "", a.logits_bf16 ? "bf16" : "fp32");
        line(r, CLI_FAMILY_PAGED_MQA, what,
             qg_indexer_compile(ctx, v < 0 ? QG_INDEXER_PAGED_SCHEDULE : QG_INDEXER_PAGED_MQA_LOGITS,
                                &a, &info),
             &info);
    }
}

static void hc_kernels(qg_context *ctx, const long *s, int splits, report *r) {
    qg_hc_prenorm_args a;
    memset(&a, 0, sizeof a);
    a.m = (int)s[0], a.n = (int)s[1], a.k = (int)s[2], a.num_splits = splits;
    a.lda = s[2], a.ldb = s[2], a.ldd = s[1];
    qg_kernel_info info;
    memset(&info, 0, sizeof info);
    char what[96];
    snprintf(what, sizeof what, "%ldx%ldx%ld splits %d", s[0], s[1], s[2], splits);
    line(r, CLI_FAMILY_HC, what, qg_indexer_compile(ctx, QG_INDEXER_HC_PRENORM, &a, &info), &info);
}

static void cast_kernels(qg_context *ctx, const long *s, report *r) {
    for (int kind = QG_CAST_KIND_PER_TOKEN; kind <= QG_CAST_KIND_SILU_MUL; kind++)
        for (int mn = 0; mn < 2; mn++)
            for (int ue = 0; ue < 2; ue++) {
                const bool token_like = kind == QG_CAST_KIND_PER_TOKEN || kind == QG_CAST_KIND_SILU_MUL;
                if ((mn && !token_like) || (kind == QG_CAST_KIND_PER_CHANNEL && s[0] % 128)) continue;
                qg_cast_args a;
                memset(&a, 0, sizeof a);
                a.m = (int)s[0], a.k = (int)s[1], a.num_groups = 1;
                a.x = FAKE(0x10000000), a.ld_x = kind == QG_CAST_KIND_SILU_MUL ? 2 * s[1] : s[1];
                a.out = FAKE(0x40000000), a.ld_out = s[1];
                a.sf = FAKE(0x70000000), a.sf_mn_major = mn, a.sf_ld = (int)((s[0] + 3) / 4 * 4);
                a.ue8m0 = ue;
                qg_kernel_info info;
                memset(&info, 0, sizeof info);
                char what[96];
                snprintf(what, sizeof what, "%s %ldx%ld bf16%s%s",
                         qgtk_cast_kind_name((qg_cast_kind)kind), s[0], s[1],
                         mn ? " mn-major" : "", ue ? " ue8m0" : "");
                line(r, CLI_FAMILY_CAST, what,
                     qg_cast_compile(ctx, (qg_cast_kind)kind, &a, NULL, &info), &info);
            }
}

int cli_compile_family(int argc, char **argv) {
    cli_family family = CLI_FAMILY_FP8;
    const char *family_text = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--family")) {
            if (family_text)
                return cli_usage_error("compile: --family given twice ('%s', then '%s')",
                                       family_text, argv[i + 1]);
            family_text = argv[++i];
        }
    if (!cli_parse_family(family_text, &family) || family == CLI_FAMILY_FP8)
        return cli_usage_error("compile: --family wants %s, got '%s'", CLI_FAMILY_CHOICES,
                               family_text ? family_text : "");
    long shapes[CLI_MAX_SHAPES][CLI_FAMILY_MAX_DIMS];
    int num_shapes = 0, splits = 1;
    bool offline = false, json = false;
    const char *splits_text = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
        if (!strcmp(a, "--offline")) offline = true;
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--progress")) continue; /* one line per kernel already */
        else if (!strcmp(a, "--family") && next) i++;
        else if (!strcmp(a, "--shape") && next) {
            if (num_shapes == CLI_MAX_SHAPES) return cli_usage_error("compile: too many --shape");
            if (!cli_family_parse_shape("compile", family, next, shapes[num_shapes++]))
                return CLI_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--splits") && next) {
            if (family != CLI_FAMILY_HC)
                return cli_usage_error("compile: --splits is for --family hc, not %s",
                                       cli_family_name(family));
            if (splits_text)
                return cli_usage_error("compile: --splits given twice ('%s', then '%s')",
                                       splits_text, next);
            if (!cli_parse_int(next, 1, 65536, &v))
                return cli_usage_error("compile: --splits wants an integer in [1, 65536], got '%s'",
                                       next);
            splits_text = next, splits = (int)v, i++;
        } else {
            return cli_usage_error("compile: unknown or incomplete option '%s' for --family %s "
                                   "(--shape %s, --offline, --json%s)", a, cli_family_name(family),
                                   cli_family_shape_form(family),
                                   family == CLI_FAMILY_HC ? ", --splits S" : "");
        }
    }
    const long (*list)[CLI_FAMILY_MAX_DIMS] = shapes;
    const int count = num_shapes ? num_shapes : cli_family_default_shapes(family, &list);

    cli_compile_context cc;
    if (!cli_compile_context_open(&cc, offline)) return CLI_EXIT_FAIL;
    qg_context *ctx = cc.ctx;
    const bool on_device = cc.on_device;
    qg_device_props props;
    qg_context_get_props(ctx, &props);
    char dir[4096];
    if (json) {
        printf("{\n  \"command\": \"compile\",\n  \"family\": \"%s\",\n  \"target\": {\"name\": ",
               cli_family_name(family));
        cli_json_string(stdout, props.name);
        printf(", \"arch\": \"sm_%d%d\", \"sms\": %d, \"offline\": %s},\n  \"cache_dir\": ",
               props.cc_major, props.cc_minor, props.sm_count, on_device ? "false" : "true");
        cli_json_string(stdout, qg__cache_dir(dir, sizeof dir) ? dir : NULL);
        printf(",\n  \"kernels\": [");
    } else {
        printf("qgemm compile --family %s: target %s (sm_%d%d, %d SMs)%s, cache %s\n",
               cli_family_name(family), props.name, props.cc_major, props.cc_minor, props.sm_count,
               on_device ? "" : " [offline]", cli_cache_dir(dir, sizeof dir));
    }
    fflush(stdout);
    report r = {.json = json};
    for (int i = 0; i < count; i++) {
        switch (family) {
        case CLI_FAMILY_BF16: bf16_kernels(ctx, list[i], &r); break;
        case CLI_FAMILY_MQA: mqa_kernels(ctx, list[i], &r); break;
        case CLI_FAMILY_PAGED_MQA: paged_kernels(ctx, list[i], &r); break;
        case CLI_FAMILY_HC: hc_kernels(ctx, list[i], splits, &r); break;
        default: cast_kernels(ctx, list[i], &r); break;
        }
    }
    if (json) printf("\n  ],\n  \"total\": %d,\n  \"failed\": %d\n}\n", r.done, r.failed);
    else printf("qgemm compile: %d kernels, %d failed\n", r.done, r.failed);
    cli_compile_context_close(&cc);
    return r.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
