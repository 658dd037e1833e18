/* SPDX-License-Identifier: MIT */
/*
 * consumer.c -- a program outside the tree that uses an installed qgemm
 * (tests/install.sh builds it with pkg-config and with CMake). It needs no GPU:
 * it prints the version, checks header and library agree, and reports what
 * qg_context_create says about device 0. With --expect-no-nvrtc it compiles one
 * kernel on an offline context and expects NVRTC's "not found" error.
 */
#include <qgemm.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    printf("qgemm %s (header %s)\n", qg_version_string(), QG_VERSION_STRING);
    if (qg_version() != QG_VERSION_NUMBER || strcmp(qg_version_string(), QG_VERSION_STRING)) {
        fprintf(stderr, "consumer: library %u does not match header %u\n", qg_version(),
                (unsigned)QG_VERSION_NUMBER);
        return 1;
    }
    qg_context *ctx = NULL;
    qg_status st = qg_context_create(&ctx, 0);
    if (st == QG_SUCCESS) {
        qg_device_props p;
        qg_context_get_props(ctx, &p);
        printf("device 0: %s\n", p.name);
        qg_context_destroy(ctx);
    } else if (st == QG_ERROR_NO_DRIVER || st == QG_ERROR_NO_DEVICE ||
               st == QG_ERROR_WRONG_ARCH) {
        printf("no usable device: %s: %s\n", qg_status_string(st), qg_last_error());
    } else {
        fprintf(stderr, "consumer: qg_context_create: %s: %s\n", qg_status_string(st),
                qg_last_error());
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--expect-no-nvrtc") == 0) {
        if (qg_context_create_offline(&ctx, NULL) != QG_SUCCESS) {
            fprintf(stderr, "consumer: offline context: %s\n", qg_last_error());
            return 1;
        }
        qg_problem prob;
        memset(&prob, 0, sizeof prob);
        prob.m = 128;
        prob.n = 128;
        prob.k = 128;
        prob.num_groups = 1;
        st = qg_compile(ctx, &prob, NULL, NULL);
        qg_context_destroy(ctx);
        if (st != QG_ERROR_COMPILE || !strstr(qg_last_error(), "NVRTC not found")) {
            fprintf(stderr, "consumer: want NVRTC not found, got %s: %s\n",
                    qg_status_string(st), qg_last_error());
            return 1;
        }
        printf("without NVRTC: %s\n", qg_last_error());
    }
    return 0;
}
