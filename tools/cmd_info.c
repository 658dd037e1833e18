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

/* `qgemm info --json`: the same facts as one JSON document; what is missing
 * is null with a "..._error" string saying why. */
static int info_json(void) {
    int nvrtc_major = 0, nvrtc_minor = 0;
    const qg_nvrtc *nv = NULL;
    char nvrtc_error[512] = "";
    if (qg__nvrtc_load(&nv) == QG_SUCCESS) nv->nvrtcVersion(&nvrtc_major, &nvrtc_minor);
    else snprintf(nvrtc_error, sizeof nvrtc_error, "%s", qg_last_error());
    char dir[4096];
    bool have_dir = qg__cache_dir(dir, sizeof dir);
    char why[512] = "";
    size_t lt_version = lt_probe_version(why, sizeof why);

    printf("{\n  \"library\": ");
    cli_json_string(stdout, qg_version_string());
    printf(",\n  \"header\": ");
    cli_json_string(stdout, QG_VERSION_STRING);
    if (nv) {
        printf(",\n  \"nvrtc\": \"%d.%d\",\n  \"nvrtc_path\": ", nvrtc_major, nvrtc_minor);
        cli_json_string(stdout, qg__nvrtc_path());
    } else {
        printf(",\n  \"nvrtc\": null,\n  \"nvrtc_error\": ");
        cli_json_string(stdout, nvrtc_error);
    }
    printf(",\n  \"cache_dir\": ");
    cli_json_string(stdout, have_dir ? dir : NULL);
    char unsafe[320];
    if (have_dir && cli_cache_dir_unsafe(dir, unsafe, sizeof unsafe)) {
        printf(",\n  \"cache_dir_error\": ");
        cli_json_string(stdout, unsafe);
    }
    if (lt_version) printf(",\n  \"cublaslt\": %zu", lt_version);
    else {
        printf(",\n  \"cublaslt\": null,\n  \"cublaslt_error\": ");
        cli_json_string(stdout, why);
    }
    qg_context *ctx = NULL;
    if (!qgtk_gpu_available()) {
        printf(",\n  \"device\": null,\n  \"device_error\": ");
        cli_json_string(stdout, qgtk_gpu_status_line());
    } else if (qg_context_create(&ctx, qgtk_gpu_device()) != QG_SUCCESS) {
        printf(",\n  \"device\": null,\n  \"device_error\": ");
        cli_json_string(stdout, qg_last_error());
        ctx = NULL;
    } else {
        const qg_driver *drv = NULL;
        int driver_version = 0;
        if (qg__driver_load(&drv) == QG_SUCCESS) drv->cuDriverGetVersion(&driver_version);
        qg_device_props pr;
        qg_context_get_props(ctx, &pr);
        printf(",\n  \"device\": {\"ordinal\": %d, \"name\": ", qgtk_gpu_device());
        cli_json_string(stdout, pr.name);
        printf(", \"driver\": \"%d.%d\", \"arch\": \"sm_%d%d\", \"sms\": %d, \"kernel_sms\": %d, "
               "\"sm_clock_mhz\": %d, \"smem_optin_bytes\": %zu, \"l2_bytes\": %zu, "
               "\"dram_gbps\": %d}",
               driver_version / 1000, driver_version % 1000 / 10, pr.cc_major, pr.cc_minor,
               pr.sm_count, qg_context_get_num_sms(ctx), pr.clock_khz / 1000, pr.smem_optin_bytes,
               (size_t)pr.l2_bytes, pr.dram_gbps);
        char too_old[512];
        if (nv && qg__driver_too_old(driver_version, nvrtc_major, nvrtc_minor, too_old,
                                     sizeof too_old)) {
            printf(",\n  \"driver_error\": ");
            cli_json_string(stdout, too_old);
        }
        qg_context_destroy(ctx);
    }
    printf("\n}\n");
    return CLI_EXIT_OK;
}

int cli_info(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = true;
        else return cli_usage_error("info: unknown option '%s' (--json)", argv[i]);
    }
    if (json) return info_json();
    int nvrtc_major = 0, nvrtc_minor = 0;
    const qg_nvrtc *nv = NULL;
    if (qg__nvrtc_load(&nv) == QG_SUCCESS) nv->nvrtcVersion(&nvrtc_major, &nvrtc_minor);
    char dir[4096];
    printf("library:     qgemm %s (header %s)\n", qg_version_string(), QG_VERSION_STRING);
    if (nv)
        printf("nvrtc:       %d.%d (%s)\n", nvrtc_major, nvrtc_minor, qg__nvrtc_path());
    else
        printf("nvrtc:       missing (%s)\n", qg_last_error());
    printf("cache dir:   %s\n", cli_cache_dir(dir, sizeof dir));
    char unsafe[320];
    if (qg__cache_dir(dir, sizeof dir) && cli_cache_dir_unsafe(dir, unsafe, sizeof unsafe))
        printf("             not used: %s\n", unsafe);

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
    char too_old[512];
    if (nv && qg__driver_too_old(driver_version, nvrtc_major, nvrtc_minor, too_old, sizeof too_old))
        printf("driver:      CUDA %d.%d: TOO OLD: %s\n", driver_version / 1000,
               driver_version % 1000 / 10, too_old);
    else
        printf("driver:      CUDA %d.%d\n", driver_version / 1000, driver_version % 1000 / 10);
    printf("arch:        sm_%d%d\n", pr.cc_major, pr.cc_minor);
    printf("SMs:         %d (kernels use %d)\n", pr.sm_count, qg_context_get_num_sms(ctx));
    printf("SM clock:    %d MHz\n", pr.clock_khz / 1000);
    printf("smem optin:  %zu bytes per block\n", pr.smem_optin_bytes);
    printf("L2:          %.1f MiB\n", (double)pr.l2_bytes / (1 << 20));
    if (pr.dram_gbps) printf("DRAM:        %d GB/s peak\n", pr.dram_gbps);
    else printf("DRAM:        unknown (the heuristic assumes an H100's)\n");
    qg_context_destroy(ctx);
    return CLI_EXIT_OK;
}
