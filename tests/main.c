/* main.c -- runs the registered tests; see qg_test.h.
 *
 * Every variable the library reads (src/env.c's table) is as the run began
 * when each test starts: a test that sets a knob and fails a CHECK before
 * its unsetenv (CHECK returns) would otherwise run the tests after it under
 * that knob (and the compile sweeps leave QGEMM_CACHE_DIR at their removed
 * scratch directory, testkit/qgtk.h). Restored silently. */
#include "qg_test.h"
#include "internal.h"
#include <stdlib.h>

#define QG_MAX_TESTS 1024
static struct { const char *name; qg_test_fn fn; } tests[QG_MAX_TESTS];
static int num_tests;

void qg_test_register(const char *name, qg_test_fn fn) {
    if (num_tests < QG_MAX_TESTS) {
        tests[num_tests].name = name;
        tests[num_tests].fn = fn;
        num_tests++;
    }
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The arguments filter by name: a test runs when its name contains one of the
 * words (all run when no word is given) and none of the "-word"s. The whole
 * GPU suite outlasts one 10-minute call of the GPU machine, so it is run in
 * parts (bench/device-check.sh: TEST_FILTER). */
static int selected(const char *name, int argc, char **argv) {
    int want = 0, any_word = 0;
    for (int a = 1; a < argc; a++) {
        if (argv[a][0] == '-') {
            if (strstr(name, argv[a] + 1)) return 0;
        } else {
            any_word = 1;
            want |= strstr(name, argv[a]) != NULL;
        }
    }
    return !any_word || want;
}

/* The knobs' values at the start (NULL: unset; a strdup that fails leaves
 * the run without the restoration), and their restoration after a test. */
static char **env_snapshot(void) {
    char **v = calloc((size_t)qg__num_env_knobs, sizeof *v);
    for (int i = 0; v && i < qg__num_env_knobs; i++) {
        const char *cur = getenv(qg__env_knobs[i].name);
        if (cur && !(v[i] = strdup(cur))) {
            while (i--) free(v[i]);
            free(v);
            return NULL;
        }
    }
    return v;
}

static void env_restore(char *const *v) {
    for (int i = 0; v && i < qg__num_env_knobs; i++) {
        const char *name = qg__env_knobs[i].name, *cur = getenv(name);
        if (cur == NULL ? v[i] == NULL : v[i] != NULL && strcmp(cur, v[i]) == 0) continue;
        if (v[i]) setenv(name, v[i], 1);
        else unsetenv(name);
    }
}

int main(int argc, char **argv) {
    qsort(tests, (size_t)num_tests, sizeof tests[0], by_name);
    int passed = 0, failed = 0, skipped = 0;
    char **env = env_snapshot();
    for (int i = 0; i < num_tests; i++) {
        if (!selected(tests[i].name, argc, argv)) continue;
        printf("[ RUN  ] %s\n", tests[i].name);
        fflush(stdout);
        qg_test_result r = tests[i].fn();
        env_restore(env);
        const char *word = r == QG_T_PASS ? "PASS" : r == QG_T_FAIL ? "FAIL" : "SKIP";
        printf("[ %s ] %s\n", word, tests[i].name);
        fflush(stdout);
        passed += r == QG_T_PASS;
        failed += r == QG_T_FAIL;
        skipped += r == QG_T_SKIP;
    }
    for (int i = 0; env && i < qg__num_env_knobs; i++) free(env[i]);
    free(env);
    if (num_tests > QG_MAX_TESTS) failed++;
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
