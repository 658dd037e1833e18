/*
 * cmd_info.c -- `qgemm info`: the library, NVRTC and cuBLASLt versions, the
 * cache directory and the device.
 */
#include "cli.h"

#include "cublaslt.h"

#include <string.h>

/* ------------------------------------------------------------------------ */
/* qgemm info                                                                */
/* ------------------------------------------------------------------------ */

int cli_info(int argc, char **argv) {
    (void)argv;
    if (argc > 1) return cli_usage_error("info takes no options");
    int nvrtc_major = 0, nvrtc_minor = 0;
    const qg_nvrtc *nv = NULL;
    if (qg__nvrtc_load(&nv) == QG_SUCCESS) nv->nvrtcVersion(&nvrtc_major, &nvrtc_minor);
    char dir[512];
    printf("library:     qgemm %s (header %s)\n", qg_version_string(), QG_VERSION_STRING);
    if (nv)
        printf("nvrtc:       %d.%d (%s)\n", nvrtc_major, nvrtc_minor, qg__nvrtc_path());
    else
        printf("nvrtc:       missing (%s)\n", qg_last_error());
    printf("cache dir:   %s\n", cli_cache_dir(dir, sizeof dir));

    char why[512] = "";
    size_t lt_version = lt_probe_version(why, sizeof why);
    if (lt_version) printf("cuBLASLt:    %zu\n", lt_version);
    else printf("cuBLASLt:    unavailable (%s)\n", why);

    if (!qgtk_gpu_available()) {
        printf("device:      none (%s)\n", qgtk_gpu_status_line());
        return CLI_EXIT_OK;
    }
    qg_context *ctx = NULL;
    if (qg_context_create(&ctx, qgtk_gpu_device()) != QG_SUCCESS) {
        printf("device:      unusable (%s)\n", qg_last_error());
        return CLI_EXIT_OK;
    }
    const qg_driver *drv = NULL;
    int driver_version = 0;
    if (qg__driver_load(&drv) == QG_SUCCESS) drv->cuDriverGetVersion(&driver_version);
    qg_device_props pr;
    qg_context_get_props(ctx, &pr);
    printf("device:      %d: %s\n", qgtk_gpu_device(), pr.name);
    printf("driver:      CUDA %d.%d\n", driver_version / 1000, driver_version % 1000 / 10);
    printf("arch:        sm_%d%d\n", pr.cc_major, pr.cc_minor);
    printf("SMs:         %d (kernels use %d)\n", pr.sm_count, qg_context_get_num_sms(ctx));
    printf("SM clock:    %d MHz\n", pr.clock_khz / 1000);
    printf("smem optin:  %zu bytes per block\n", pr.smem_optin_bytes);
    printf("L2:          %.1f MiB\n", (double)pr.l2_bytes / (1 << 20));
    qg_context_destroy(ctx);
    return CLI_EXIT_OK;
}
