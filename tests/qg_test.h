/*
 * qg_test.h -- the test harness: TEST() registers a function, CHECK() records
 * a failure and returns from it, SKIP() marks it skipped with a reason.
 * tests/main.c runs every test (or those whose name contains argv[1], or all
 * but those containing X when argv[1] is "-X") and
 * ends with the line "N passed, N failed, N skipped"; exit status 1 on any
 * failure.
 */
#ifndef QG_TEST_H
#define QG_TEST_H
#include <stdio.h>
#include <string.h>

typedef enum { QG_T_PASS, QG_T_FAIL, QG_T_SKIP } qg_test_result;
typedef qg_test_result (*qg_test_fn)(void);
void qg_test_register(const char *name, qg_test_fn fn);

#define TEST(name)                                                              \
    static qg_test_result test_##name(void);                                    \
    __attribute__((constructor)) static void register_##name(void) {           \
        qg_test_register(#name, test_##name);                                   \
    }                                                                           \
    static qg_test_result test_##name(void)

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("    FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            return QG_T_FAIL;                                                   \
        }                                                                       \
    } while (0)

#define SKIP(...)                                                               \
    do {                                                                        \
        printf("    skipped: ");                                                \
        printf(__VA_ARGS__);                                                    \
        printf("\n");                                                           \
        return QG_T_SKIP;                                                       \
    } while (0)

#define PASS() return QG_T_PASS

#endif
