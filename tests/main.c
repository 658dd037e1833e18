/* main.c -- runs the registered tests; see qg_test.h. */
#include "qg_test.h"
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

int main(int argc, char **argv) {
    qsort(tests, (size_t)num_tests, sizeof tests[0], by_name);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < num_tests; i++) {
        /* argv[1]: run tests whose name contains it; "-word": all but those. */
        if (argc > 1 && argv[1][0] != '-' && !strstr(tests[i].name, argv[1])) continue;
        if (argc > 1 && argv[1][0] == '-' && strstr(tests[i].name, argv[1] + 1)) continue;
        printf("[ RUN  ] %s\n", tests[i].name);
        fflush(stdout);
        qg_test_result r = tests[i].fn();
        const char *word = r == QG_T_PASS ? "PASS" : r == QG_T_FAIL ? "FAIL" : "SKIP";
        printf("[ %s ] %s\n", word, tests[i].name);
        fflush(stdout);
        passed += r == QG_T_PASS;
        failed += r == QG_T_FAIL;
        skipped += r == QG_T_SKIP;
    }
    if (num_tests > QG_MAX_TESTS) failed++;
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
