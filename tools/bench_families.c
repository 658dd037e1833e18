/*
 * bench_families.c -- `qgemm bench --family F` for the families beside the
 * FP8 GEMMs (cli.h): BF16 GEMMs, FP8 MQA logits (ragged and paged), the TF32
 * HC prenorm GEMM, the casts. Each row is one testkit case
 * (testkit/qgtk_cases.h): fresh random inputs, outputs poisoned, the call
 * checked against the host reference (on SAMPLE_ROWS rows spread over the
 * output: the full fp64 reference of a benchmark shape would take minutes),
 * then timed as the FP8 bench times (qgtk_time_us: warm-up runs, an L2 flush
 * before each timed run outside the CUDA events around the call, the
 * median). TFLOPS = the call's useful FLOPs / t (BF16, HC: 2 M N K over the
 * rows written; logits: 2 H D per scored key); GB/s = the bytes the call
 * must move (inputs read once, outputs written once) / t.
 * No peer here: bench/peers.py times DeepGEMM beside qgemm.
 */
#include "cli.h"

#include "qgtk_cases.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_ROWS 16
#define MAX_DIMS CLI_FAMILY_MAX_DIMS

typedef struct {
    cli_family family;
    bool json;
    int runs, warmup;
    qgtk_l2_flush_mode flush;
    uint64_t seed;
    long shapes[CLI_MAX_SHAPES][MAX_DIMS];
    int num_shapes;
    qg_major a_major, b_major; /* bf16 --layout */
    int out_set, out_fp32;     /* --out bf16|fp32 */
    int splits;                /* hc --splits */
    qg_cast_kind cast;         /* cast --cast */
    int ue8m0, in_fp32, clean;
} fam_opts;

/* The families a family-specific option is for, or NULL for a common one. */
static const char *option_families(const char *opt, cli_family f, bool *ok) {
    const char *fams = NULL;
    *ok = true;
    if (!strcmp(opt, "--layout")) fams = "bf16", *ok = f == CLI_FAMILY_BF16;
    else if (!strcmp(opt, "--out"))
        fams = "bf16, mqa or paged-mqa",
        *ok = f == CLI_FAMILY_BF16 || f == CLI_FAMILY_MQA || f == CLI_FAMILY_PAGED_MQA;
    else if (!strcmp(opt, "--clean"))
        fams = "mqa or paged-mqa", *ok = f == CLI_FAMILY_MQA || f == CLI_FAMILY_PAGED_MQA;
    else if (!strcmp(opt, "--splits")) fams = "hc", *ok = f == CLI_FAMILY_HC;
    else if (!strcmp(opt, "--cast") || !strcmp(opt, "--ue8m0") || !strcmp(opt, "--in"))
        fams = "cast", *ok = f == CLI_FAMILY_CAST;
    return fams;
}

static int parse(int argc, char **argv, fam_opts *o) {
    memset(o, 0, sizeof *o);
    o->runs = CLI_BENCH_DEFAULT_RUNS, o->warmup = CLI_BENCH_DEFAULT_WARMUP;
    o->flush = QGTK_L2_FLUSH_CLEAN;
    o->seed = cli_fresh_seed();
    o->cast = QG_CAST_KIND_PER_TOKEN;
    o->splits = 1;
    /* the family first: it says what --shape means */
    const char *family_text = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--family")) {
            if (family_text)
                return cli_usage_error("bench: --family given twice ('%s', then '%s')", family_text,
                                       argv[i + 1]);
            family_text = argv[++i];
        }
    if (!cli_parse_family(family_text, &o->family) || o->family == CLI_FAMILY_FP8)
        return cli_usage_error("bench: --family wants %s, got '%s'", CLI_FAMILY_CHOICES,
                               family_text ? family_text : "");
    static const char *const single[] = {"--runs", "--warmup", "--flush", "--seed", "--layout",
                                         "--out", "--splits", "--cast", "--in"};
    const char *given[sizeof single / sizeof single[0]] = {0};
    const char *fam = cli_family_name(o->family);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        long v;
        if (cli_single_value("bench", a, next, single, given, sizeof single / sizeof single[0]))
            return CLI_EXIT_USAGE;
        bool fits;
        const char *fams = option_families(a, o->family, &fits);
        if (!fits) return cli_usage_error("bench: %s is for --family %s, not %s", a, fams, fam);
        if (!strcmp(a, "--json")) o->json = true;
        else if (!strcmp(a, "--ue8m0")) o->ue8m0 = 1;
        else if (!strcmp(a, "--clean")) o->clean = 1;
        else if (!strcmp(a, "--csv"))
            return cli_usage_error("bench: --family %s writes a table or --json, not --csv", fam);
        else if (!next) return cli_usage_error("bench: unknown or incomplete option '%s'", a);
        else if (!strcmp(a, "--family")) i++;
        else if (!strcmp(a, "--shape")) {
            if (o->num_shapes == CLI_MAX_SHAPES) return cli_usage_error("bench: too many --shape");
            if (!cli_family_parse_shape("bench", o->family, next, o->shapes[o->num_shapes++]))
                return CLI_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--runs") || !strcmp(a, "--warmup")) {
            if (cli_bench_count(a, next, &o->runs, &o->warmup)) return CLI_EXIT_USAGE;
            i++;
        } else if (!strcmp(a, "--flush")) {
            if (!strcmp(next, "clean")) o->flush = QGTK_L2_FLUSH_CLEAN;
            else if (!strcmp(next, "write")) o->flush = QGTK_L2_FLUSH_WRITE;
            else return cli_usage_error("bench: --flush wants clean or write, got '%s'", next);
            i++;
        } else if (!strcmp(a, "--seed")) {
            if (!cli_parse_int(next, 0, 2147483647L, &v))
                return cli_usage_error("bench: --seed wants an integer in [0, 2147483647], got "
                                       "'%s'", next);
            o->seed = (uint64_t)v, i++;
        } else if (!strcmp(a, "--layout")) {
            static const char *const names[4] = {"nt", "nn", "tn", "tt"};
            int l = 0;
            while (l < 4 && strcmp(next, names[l])) l++;
            if (l == 4)
                return cli_usage_error("bench: --layout wants nt, nn, tn or tt, got '%s'", next);
            o->a_major = l >= 2 ? QG_MAJOR_MN : QG_MAJOR_K;
            o->b_major = l % 2 ? QG_MAJOR_MN : QG_MAJOR_K;
            i++;
        } else if (!strcmp(a, "--out") || !strcmp(a, "--in")) {
            if (strcmp(next, "bf16") && strcmp(next, "fp32"))
                return cli_usage_error("bench: %s wants bf16 or fp32, got '%s'", a, next);
            if (!strcmp(a, "--out")) o->out_set = 1, o->out_fp32 = !strcmp(next, "fp32");
            else o->in_fp32 = !strcmp(next, "fp32");
            i++;
        } else if (!strcmp(a, "--splits")) {
            if (!cli_parse_int(next, 1, 65536, &v))
                return cli_usage_error("bench: --splits wants an integer in [1, 65536], got '%s'",
                                       next);
            o->splits = (int)v, i++;
        } else if (!strcmp(a, "--cast")) {
            int k = QG_CAST_KIND_PER_TOKEN;
            while (k <= QG_CAST_KIND_SILU_MUL && strcmp(next, qgtk_cast_kind_name((qg_cast_kind)k)))
                k++;
            if (k > QG_CAST_KIND_SILU_MUL)
                return cli_usage_error("bench: --cast wants per-token, per-block, per-channel or "
                                       "silu-mul, got '%s'", next);
            o->cast = (qg_cast_kind)k, i++;
        } else {
            return cli_usage_error("bench: unknown option '%s'", a);
        }
    }
    if (!o->out_set) o->out_fp32 = o->family != CLI_FAMILY_BF16; /* DeepGEMM's defaults */
    for (int i = 0; i < o->num_shapes; i++) {
        const long *s = o->shapes[i];
        if (o->family == CLI_FAMILY_BF16 && s[1] % 8)
            return cli_usage_error("bench: --shape %ldx%ldx%ld: N must be a multiple of 8, got %ld",
                                   s[0], s[1], s[2], s[1]);
        if (o->family == CLI_FAMILY_HC && (s[1] % 8 || s[2] % 64))
            return cli_usage_error("bench: --shape %ldx%ldx%ld: HC wants N in {8, 16, 24, 32} and "
                                   "K a multiple of 64", s[0], s[1], s[2]);
        if (o->family == CLI_FAMILY_MQA || o->family == CLI_FAMILY_PAGED_MQA) {
            const long heads = s[2], dim = s[3]; /* SQxSKVxHxD, BxNxHxDxL */
            if ((heads != 32 && heads != 64) || (dim != 32 && dim != 64 && dim != 128))
                return cli_usage_error("bench: --shape for --family %s: heads must be 32 or 64 and "
                                       "the head dim 32, 64 or 128, got %ld and %ld", fam, heads,
                                       dim);
        }
        if (o->family == CLI_FAMILY_CAST && o->cast == QG_CAST_KIND_PER_CHANNEL && s[0] % 128)
            return cli_usage_error("bench: --cast per-channel wants rows a multiple of 128, got %ld",
                                   s[0]);
    }
    return 0;
}

/* Row i's case, run, checked and timed; its label into label. */
static bool run_row(qg_context *ctx, CUstream stream, const fam_opts *o, const long *s,
                    const qgtk_case_opts *opts, qgtk_case_result *res, char *label, size_t len) {
    switch (o->family) {
    case CLI_FAMILY_BF16: {
        const qgtk_bf16_case c = {QG_GEMM_DENSE, (int)s[0], (int)s[1], (int)s[2], 1, o->a_major,
                                  o->b_major, o->out_fp32, 0};
        snprintf(label, len, "%s %s", qgtk_bf16_layout_name(c.a_major, c.b_major),
                 c.d_fp32 ? "fp32" : "bf16");
        return qgtk_bf16_case_run(ctx, stream, &c, opts, res);
    }
    case CLI_FAMILY_MQA: {
        const qgtk_mqa_case c = {(int)s[0], (int)s[1], (int)s[2], (int)s[3], !o->out_fp32,
                                 o->clean, 1};
        snprintf(label, len, "%s%s", c.bf16 ? "bf16" : "fp32", c.mode ? " clean" : "");
        return qgtk_mqa_case_run(ctx, stream, &c, opts, res);
    }
    case CLI_FAMILY_PAGED_MQA: {
        const qgtk_paged_case c = {(int)s[0], (int)s[1], (int)s[2], (int)s[3], !o->out_fp32,
                                   o->clean, (int)s[4], 0};
        snprintf(label, len, "%s%s", c.bf16 ? "bf16" : "fp32", c.clean ? " clean" : "");
        return qgtk_paged_case_run(ctx, stream, &c, opts, res);
    }
    case CLI_FAMILY_HC: {
        const qgtk_hc_case c = {(int)s[0], (int)s[1], (int)s[2], o->splits};
        snprintf(label, len, "splits %d", c.splits);
        return qgtk_hc_case_run(ctx, stream, &c, opts, res);
    }
    case CLI_FAMILY_CAST: {
        const qgtk_cast_case c = {o->cast, o->in_fp32, o->ue8m0, 0, 0, 1, (int)s[0], (int)s[1], 0, 0};
        snprintf(label, len, "%s %s%s", qgtk_cast_kind_name(c.kind), c.f32 ? "fp32" : "bf16",
                 c.ue ? " ue8m0" : "");
        return qgtk_cast_case_run(ctx, stream, &c, opts, res);
    }
    default: return false;
    }
}

int cli_bench_family(int argc, char **argv) {
    fam_opts o;
    int bad = parse(argc, argv, &o);
    if (bad) return bad;
    const long (*shapes)[MAX_DIMS] = o.shapes;
    int count = o.num_shapes;
    if (!count) count = cli_family_default_shapes(o.family, &shapes);
    qg_context *ctx;
    const qg_driver *drv;
    if (!cli_open_gpu_json(&ctx, &drv, o.json ? "bench" : NULL)) return CLI_EXIT_NO_GPU;
    qg_device_props props;
    qg_context_get_props(ctx, &props);
    CUstream stream = NULL;
    if (drv->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        fprintf(stderr, "qgemm: bench: cannot create a stream\n");
        cli_close_gpu(ctx, drv);
        return CLI_EXIT_FAIL;
    }
    const char *fam = cli_family_name(o.family), *flush = o.flush == QGTK_L2_FLUSH_CLEAN ? "clean" : "write";
    if (o.json) {
        printf("{\n  \"command\": \"bench\",\n  \"family\": \"%s\",\n  \"device\": ", fam);
        cli_json_string(stdout, props.name);
        printf(",\n  \"sms\": %d,\n  \"version\": \"%s\",\n  \"seed\": %llu,\n  \"flush\": \"%s\",\n"
               "  \"runs\": %d,\n  \"warmup\": %d,\n  \"checked_rows\": %d,\n  \"rows\": [",
               props.sm_count, qg_version_string(), (unsigned long long)o.seed, flush, o.runs,
               o.warmup, SAMPLE_ROWS);
    } else {
        printf("qgemm bench --family %s on %s (%d SMs), seed %llu\nCUDA events around each call "
               "after an L2 flush (%s), median of %d runs after %d warm-up; checked on %d sampled "
               "rows\n\n%-24s %-18s %10s %10s %10s %8s %8s %10s\n", fam, props.name, props.sm_count,
               (unsigned long long)o.seed, flush, o.runs, o.warmup, SAMPLE_ROWS,
               cli_family_shape_form(o.family), "case", "median us", "min us", "max us", "TFLOPS",
               "GB/s", "diff");
    }
    fflush(stdout);
    int failures = 0;
    for (int i = 0; i < count; i++) {
        char shape[64] = "", label[64] = "";
        for (int k = 0; k < cli_family_shape_dims(o.family); k++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%ld", k ? "x" : "",
                     shapes[i][k]);
        fprintf(stderr, "preparing and checking %s %s ...\n", fam, shape);
        const qgtk_case_opts opts = {.seed = o.seed + (uint64_t)i, .sample = SAMPLE_ROWS,
                                     .flush = o.flush, .warmup = o.warmup, .runs = o.runs};
        qgtk_case_result res;
        const bool ok = run_row(ctx, stream, &o, shapes[i], &opts, &res, label, sizeof label);
        failures += !ok;
        const double us = res.t.median_us, tflops = res.flops / (us * 1e6), gbs = res.bytes / (us * 1e3);
        if (o.json) {
            printf("%s\n    {\"shape\": \"%s\", \"case\": ", i ? "," : "", shape);
            cli_json_string(stdout, label);
            printf(", \"passed\": %s, \"diff\": ", ok ? "true" : "false");
            cli_json_number(stdout, "%.6e", res.diff);
            if (res.timed) {
                printf(", \"us\": %.3f, \"min_us\": %.3f, \"max_us\": %.3f, \"flops\": %.6e, "
                       "\"bytes\": %.6e, \"tflops\": ", us, res.t.min_us, res.t.max_us, res.flops,
                       res.bytes);
                cli_json_number(stdout, "%.3f", res.flops > 0 ? tflops : NAN);
                printf(", \"gbps\": %.1f", gbs);
            }
            if (!ok) {
                printf(", \"error\": ");
                cli_json_string(stdout, res.why);
            }
            printf("}");
        } else if (res.timed) {
            char tf[16] = "-";
            if (res.flops > 0) snprintf(tf, sizeof tf, "%.1f", tflops);
            printf("%-24s %-18s %10.2f %10.2f %10.2f %8s %8.0f %10.2e\n", shape, label, us,
                   res.t.min_us, res.t.max_us, tf, gbs, res.diff);
        } else {
            printf("%-24s %-18s FAILED: %s\n", shape, label, res.why);
        }
        fflush(stdout);
    }
    if (o.json) printf("\n  ],\n  \"failed\": %d\n}\n", failures);
    if (failures) fprintf(stderr, "qgemm bench: %d problem(s) FAILED their check or errored\n", failures);
    drv->cuStreamDestroy(stream);
    cli_close_gpu(ctx, drv);
    return failures ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
