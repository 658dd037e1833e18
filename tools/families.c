/*
 * families.c -- the kernel families the commands take as --family (cli.h):
 * their names and the "AxBx..." shapes of their options.
 */
#include "cli.h"

#include <string.h>

/* Each family's --shape: its fields, their bounds, and the defaults. */
static const struct {
    const char *form, *meaning;
    int dims;
    long lo[CLI_FAMILY_MAX_DIMS], hi[CLI_FAMILY_MAX_DIMS];
} shape_forms[CLI_NUM_FAMILIES] = {
    [CLI_FAMILY_BF16] = {"MxNxK", "M, N (a multiple of 8), K", 3,
                         {1, 8, 1}, {1L << 20, 1L << 20, 1L << 20}},
    [CLI_FAMILY_MQA] = {"SQxSKVxHxD", "queries, keys, heads (32 or 64), head dim (32, 64 or 128)",
                        4, {1, 1, 32, 32}, {1L << 17, 1L << 20, 64, 128}},
    [CLI_FAMILY_PAGED_MQA] = {"BxNxHxDxL", "batch, next_n (1 or 2), heads (32 or 64), head dim "
                              "(32, 64 or 128), average context length", 5,
                              {1, 1, 32, 32, 1}, {1L << 16, 2, 64, 128, 1L << 20}},
    [CLI_FAMILY_HC] = {"MxNxK", "M, N (8, 16, 24 or 32), K (a multiple of 64)", 3,
                       {1, 8, 64}, {1L << 20, 32, 1L << 20}},
    [CLI_FAMILY_CAST] = {"MxK", "rows, columns (per-channel: rows a multiple of 128)", 2,
                         {1, 1}, {1L << 20, 1L << 20}},
};

static const long bf16_defaults[][CLI_FAMILY_MAX_DIMS] = {{64, 2112, 7168}, {128, 7168, 2048},
                                               {4096, 7168, 16384}, {4096, 4096, 7168}};
static const long mqa_defaults[][CLI_FAMILY_MAX_DIMS] = {{2048, 8192, 64, 128}, {2048, 65536, 64, 128}};
static const long paged_defaults[][CLI_FAMILY_MAX_DIMS] = {{128, 2, 64, 128, 4096}, {4096, 1, 64, 128, 8192}};
static const long hc_defaults[][CLI_FAMILY_MAX_DIMS] = {{4096, 24, 7168}, {8192, 24, 28672}};
static const long cast_defaults[][CLI_FAMILY_MAX_DIMS] = {{64, 7168}, {4096, 7168}, {16384, 7168}};

const char *cli_family_shape_form(cli_family f) {
    return f > CLI_FAMILY_FP8 && f < CLI_NUM_FAMILIES ? shape_forms[f].form : "MxNxK";
}

int cli_family_shape_dims(cli_family f) {
    return f > CLI_FAMILY_FP8 && f < CLI_NUM_FAMILIES ? shape_forms[f].dims : 3;
}

int cli_family_default_shapes(cli_family f, const long (**out)[CLI_FAMILY_MAX_DIMS]) {
#define DEFAULTS(t) (*out = (t), (int)(sizeof(t) / sizeof((t)[0])))
    switch (f) {
    case CLI_FAMILY_BF16: return DEFAULTS(bf16_defaults);
    case CLI_FAMILY_MQA: return DEFAULTS(mqa_defaults);
    case CLI_FAMILY_PAGED_MQA: return DEFAULTS(paged_defaults);
    case CLI_FAMILY_HC: return DEFAULTS(hc_defaults);
    case CLI_FAMILY_CAST: return DEFAULTS(cast_defaults);
    default: return 0;
    }
#undef DEFAULTS
}

bool cli_family_parse_shape(const char *command, cli_family f, const char *text, long *out) {
    if (f <= CLI_FAMILY_FP8 || f >= CLI_NUM_FAMILIES) return false;
    const int d = shape_forms[f].dims;
    bool ok = cli_parse_dims(text, d, 1, 1L << 30, out);
    for (int k = 0; ok && k < d; k++) ok = out[k] >= shape_forms[f].lo[k] && out[k] <= shape_forms[f].hi[k];
    if (ok) return true;
    char bounds[160] = "";
    for (int k = 0; k < d; k++)
        snprintf(bounds + strlen(bounds), sizeof bounds - strlen(bounds), "%s[%ld, %ld]",
                 k ? " x " : "", shape_forms[f].lo[k], shape_forms[f].hi[k]);
    cli_usage_error("%s: --shape for --family %s wants %s (%s; each in %s), got '%s'", command,
                    cli_family_name(f), shape_forms[f].form, shape_forms[f].meaning, bounds,
                    text ? text : "");
    return false;
}

static const char *const family_names[CLI_NUM_FAMILIES] = {"fp8", "bf16", "mqa", "paged-mqa",
                                                           "hc",  "cast"};

const char *cli_family_name(cli_family f) {
    return f >= 0 && f < CLI_NUM_FAMILIES ? family_names[f] : "?";
}

bool cli_parse_family(const char *text, cli_family *out) {
    for (int f = 0; text && f < CLI_NUM_FAMILIES; f++)
        if (!strcmp(text, family_names[f])) {
            *out = (cli_family)f;
            return true;
        }
    return false;
}

bool cli_parse_family_set(const char *text, bool set[CLI_NUM_FAMILIES]) {
    bool add[CLI_NUM_FAMILIES] = {false};
    const char *p = text;
    if (!p) return false;
    for (;;) {
        const size_t len = strcspn(p, ",");
        char name[16];
        if (len == 0 || len >= sizeof name) return false; /* empty, or no name this long */
        memcpy(name, p, len);
        name[len] = '\0';
        cli_family f;
        if (!strcmp(name, "all"))
            for (int i = 0; i < CLI_NUM_FAMILIES; i++) add[i] = true;
        else if (cli_parse_family(name, &f)) add[f] = true;
        else return false;
        if (!p[len]) break;
        p += len + 1;
    }
    for (int i = 0; i < CLI_NUM_FAMILIES; i++) set[i] = set[i] || add[i];
    return true;
}

bool cli_parse_dims(const char *text, int count, long lo, long hi, long *out) {
    const char *p = text;
    if (!p) return false;
    for (int i = 0; i < count; i++) {
        const size_t len = strcspn(p, i + 1 < count ? "xX" : "");
        if ((i + 1 < count && p[len] == '\0') || !cli_parse_int_field(p, len, lo, hi, &out[i]))
            return false;
        p += len + (i + 1 < count);
    }
    return true;
}
