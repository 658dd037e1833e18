/*
 * cli.h -- what the files of the command-line tool `qgemm` share.
 *
 *   qgemm.c        main: usage and dispatch to the commands below
 *   cli.c          the helpers below (argument parsing, shape tables, opening
 *                  the GPU); it takes nothing from the command units
 *   cmd_check.c    `qgemm check`: the correctness sweep
 *   cmd_compile.c  `qgemm compile`: warm the kernel cache
 *   cmd_info.c     `qgemm info`: versions, cache directory, device
 *   bench.c        `qgemm bench`: qgemm against cuBLASLt, dense and grouped
 *   cublaslt.c     the cuBLASLt peer (cublaslt.h)
 *   families.c     the kernel families' names and shape options (below)
 *   cmd_check_families.c   `qgemm check`'s cases of the families beside FP8
 *   bench_families.c       `qgemm bench --family` for those families
 *   compile_families.c     `qgemm compile --family` for those families
 *
 * Symbols flow one way: qgemm.c takes the commands' entry points, the
 * commands take cli.c's helpers and cublaslt.c's peer; no unit takes from
 * one above it.
 *
 * Invariants:
 *  - exit codes: 0 success, 1 a check (or a compile) failed, 2 usage error,
 *    3 no usable GPU;
 *  - without a GPU, GPU subcommands print exactly one line on stderr
 *    ("qgemm: no GPU: <reason>") and exit 3, never crash; with --json also
 *    one JSON document on stdout with the reason ("device_error");
 *  - results go to stdout (with --json: one JSON document and nothing else),
 *    progress and errors to stderr;
 *  - after cli_open_gpu() the device's primary context stays current on the
 *    main thread, so tool code may call the driver (qg_driver) directly.
 */
#ifndef QG_TOOLS_CLI_H
#define QG_TOOLS_CLI_H

#include "qgtk.h" /* the testkit: qgemm.h, its seam (driver table), <cuda.h> types */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_NO_GPU 3

/* The accuracy bound against the exact (dequantized) reference: docs/DESIGN.md §7. */
#define CLI_DIFF_BOUND 1e-5

typedef struct {
    int m, n, k;
} cli_shape;

#define CLI_MAX_SHAPES 64
/* `qgemm bench`'s timed calls and warm-up calls: defaults and bounds (FP8 and --family) */
#define CLI_BENCH_DEFAULT_RUNS 30
#define CLI_BENCH_MIN_RUNS 20
#define CLI_BENCH_MAX_RUNS 100000
#define CLI_BENCH_DEFAULT_WARMUP 5
#define CLI_BENCH_MIN_WARMUP 3
#define CLI_BENCH_MAX_WARMUP 100000
#define CLI_NUM_DEEPSEEK_SHAPES 18
/* `bench`'s --runs (`opt`, into *runs) or --warmup (into *warmup) with its
 * value `next`, in the bounds above. @return 0, or cli_usage_error's 2. */
int cli_bench_count(const char *opt, const char *next, int *runs, int *warmup);
/* `compile`'s context: the real device's when there is one and not
 * `offline` (its CUDA context pushed current: the cache then holds what
 * this machine will run), else an offline one (an H100). */
typedef struct {
    qg_context *ctx;
    const qg_driver *drv;
    bool pushed, on_device;
} cli_compile_context;
/* @return false after one line on stderr when not even an offline context
 * could be made (nothing to close). */
bool cli_compile_context_open(cli_compile_context *c, bool offline);
/* Pop what open pushed; destroy the context. */
void cli_compile_context_close(cli_compile_context *c);
/* Options that hold one value (single[0 .. n)): when `opt` is one of them and
 * has a value `next`, records it in given[] (n entries, NULL at first); a
 * second value is refused, both named ("<cmd>: --x given twice ('a', then
 * 'b')"). @return 0, or cli_usage_error's 2. */
int cli_single_value(const char *cmd, const char *opt, const char *next,
                     const char *const single[], const char *given[], size_t n);

/* The DeepSeek-V3 table: M in {64, 128, 4096} x the six (N, K) pairs. */
void cli_deepseek_shapes(cli_shape out[CLI_NUM_DEEPSEEK_SHAPES]);

/* "MxNxK" with positive integers. @return true and *out on success. */
bool cli_parse_shape(const char *text, cli_shape *out);
/* A decimal integer in [lo, hi] (digits, optional '-'; no blanks, '+' or
 * out-of-range text). */
bool cli_parse_int(const char *text, long lo, long hi, long *out);
/* The same for the first len characters of text (a field of a list): a
 * field too long for any integer is refused, never truncated. */
bool cli_parse_int_field(const char *text, size_t len, long lo, long hi, long *out);
/* "G,M_max": a group count in [1, CLI_MAX_GROUPS] and rows per group in
 * [1, 2^20] (masked grouped problems). */
bool cli_parse_groups_rows(const char *text, int *groups, int *rows);
#define CLI_MAX_GROUPS 1024
/* The (N, K) pairs of `qgemm bench --grouped` (and compile's grouped default). */
extern const int cli_grouped_nk[2][2];
/* "bm,bn,stages,mc" (mc: none|a|b or 0|1|2 for multicast, k2 for split-K
 * over the cluster's two CTAs) into a zeroed qg_config. */
bool cli_parse_config(const char *text, qg_config *out);
/* The configuration q runs with: *forced completed by qg_complete_config when
 * forced is not NULL (a --config), else the heuristic's (qg_select_config).
 * @return the library's status; its message is qg_last_error(). */
qg_status cli_config_for(const qg_context *ctx, const qg_problem *q, const qg_config *forced,
                         qg_config *out);
/* What the configuration's cluster does: "none", "A" or "B" (multicast), or
 * "K2" (split-K). */
const char *cli_cluster_name(const qg_config *cfg);
/* A seed from the clock, for fresh inputs on every run (printed so a failure
 * can be reproduced with --seed). */
uint64_t cli_fresh_seed(void);

/* "dense", "contiguous" or "masked". */
const char *cli_kind_name(qg_gemm_kind kind);

/* The qg_problem (kernel selection view) of a generated problem. */
qg_problem cli_problem_of(const qgtk_problem_data *p);

/* Print "qgemm: <message>" and a hint to run --help (the command's, after
 * cli_set_command) on one line of stderr; return 2. */
void cli_set_command(const char *name);
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --option=value split into --option value, for every argument from argv[1]
 * on (argv[0], the command's name, is kept) that starts with "--" and holds
 * a '='; a flag that takes no value (--json=1) is refused. *out is a new
 * array (free it) of the same strings or pieces of copies.
 * @return the new count, or -1 after a usage error was printed. */
int cli_split_option_values(int argc, char **argv, char ***out);

/* s as a JSON string (quotes, escapes) on f; "null" when s is NULL. */
void cli_json_string(FILE *f, const char *s);

/* v in printf format fmt on f; "null" when v is NaN or infinite (JSON has
 * neither: a failed check's diff is NaN). */
void cli_json_number(FILE *f, const char *fmt, double v);

/* Progress on stderr for long work: one line as each step starts, "qgemm
 * <what>: [count/total] <seconds> s elapsed, <label>", when enabled (stderr
 * a terminal, or forced by --progress). */
typedef struct {
    bool enabled;
    int total;
    double start;
    const char *what;
} cli_progress;
void cli_progress_start(cli_progress *p, const char *what, int total, bool forced);
void cli_progress_step(cli_progress *p, int count, const char *label);

/*
 * Open the first Hopper GPU, retain its context and make it current.
 * On failure print "qgemm: no GPU: <reason>" on stderr and return false
 * (the command then exits CLI_EXIT_NO_GPU).
 */
bool cli_open_gpu(qg_context **ctx, const qg_driver **drv);
/* The same; when json_command is not NULL (the command runs with --json) a
 * failure also prints one JSON document on stdout: {"command": json_command,
 * "device": null, "device_error": "<reason>", "exit_status": 3}. */
bool cli_open_gpu_json(qg_context **ctx, const qg_driver **drv, const char *json_command);
void cli_close_gpu(qg_context *ctx, const qg_driver *drv);

/* The disk cache directory by the library's rule (qg__cache_dir), or
 * "none (...)" saying why there is none, into buf. @return buf. */
const char *cli_cache_dir(char *buf, size_t len);
/* Why the library does not use the existing cache directory `dir` (owned by
 * another user, or writable by others: qg__cache_dir_unsafe), into why; NULL
 * when it is used (or does not exist yet). */
const char *cli_cache_dir_unsafe(const char *dir, char *why, size_t len);

/* ---- kernel families (families.c) ------------------------------------------ */

/* What `check`, `bench` and `compile` take as --family: the FP8 GEMMs (the
 * commands' original tables) and the families beside them (issues 49-51),
 * whose cases run through the testkit (testkit/qgtk_cases.h). */
typedef enum {
    CLI_FAMILY_FP8,
    CLI_FAMILY_BF16,
    CLI_FAMILY_MQA,
    CLI_FAMILY_PAGED_MQA,
    CLI_FAMILY_HC,
    CLI_FAMILY_CAST,
    CLI_NUM_FAMILIES
} cli_family;
#define CLI_FAMILY_CHOICES "fp8, bf16, mqa, paged-mqa, hc, cast"

/* "fp8", "bf16", "mqa", "paged-mqa", "hc", "cast". */
const char *cli_family_name(cli_family f);
/* One name into *out. @return false for any other text. */
bool cli_parse_family(const char *text, cli_family *out);
/* A name, "all", or a comma list of names, added to set[]. @return false
 * (set untouched) for an unknown or empty name. */
bool cli_parse_family_set(const char *text, bool set[CLI_NUM_FAMILIES]);
/* Each family's --shape (not FP8's MxNxK): its form ("MxNxK", "SQxSKVxHxD",
 * "BxNxHxDxL", "MxK"), its number of fields, the defaults of `qgemm bench
 * --family` (and `compile --family`), and parsing one, its fields in their
 * bounds: on failure a usage error for `command` naming the form, the
 * fields' meaning and bounds, and the text. */
#define CLI_FAMILY_MAX_DIMS 5
const char *cli_family_shape_form(cli_family f);
int cli_family_shape_dims(cli_family f);
int cli_family_default_shapes(cli_family f, const long (**out)[CLI_FAMILY_MAX_DIMS]);
bool cli_family_parse_shape(const char *command, cli_family f, const char *text, long *out);
/* "AxBx..." of exactly `count` integers in [lo, hi] each, into out. */
bool cli_parse_dims(const char *text, int count, long lo, long hi, long *out);

/* The families' part of `qgemm check` (cmd_check_families.c): the number of
 * cases of family f (not FP8), and running them: one line each, or with
 * json one object of the "cases" array each (a comma before it unless
 * *first, which it clears); progress steps from *done on.
 * @return the number of failed cases. */
int cli_check_family_count(cli_family f, bool quick);
int cli_check_family_run(qg_context *ctx, cli_family f, bool quick, uint64_t seed, bool json,
                         bool *first, cli_progress *bar, int *done);

/* `qgemm bench --family F` for F other than fp8 (bench_families.c): its own
 * options (argv as cli_bench's). @return the exit code. */
int cli_bench_family(int argc, char **argv);

/* `qgemm compile --family F` for F other than fp8 (compile_families.c): its
 * own options (argv as cli_compile's). @return the exit code. */
int cli_compile_family(int argc, char **argv);

/* ---- the commands: argv[0] is the command's name; @return the exit code -- */

int cli_bench(int argc, char **argv);   /* bench.c */
int cli_check(int argc, char **argv);   /* cmd_check.c */
int cli_compile(int argc, char **argv); /* cmd_compile.c */
int cli_info(int argc, char **argv);    /* cmd_info.c */
int cli_cache(int argc, char **argv);   /* cmd_cache.c */

#endif /* QG_TOOLS_CLI_H */
