/*
 * libcuda.so.1 -- Kindling test stand-in, NOT NVIDIA's CUDA driver library.
 *
 * Installed by the Kindling test-fixture driver userspace packages (built by
 * tests/fixture_sources/build_fixtures.py, which compiles this file with gcc). It talks to no
 * GPU. It answers the five calls of Kindling's cuInit probe (module_utils/cuda_init.py) the way
 * the stand-in host is meant to look:
 *
 * - On a host whose stand-in nvidia-smi prints the HGX capture set (the file
 *   /etc/kindling-fixture/nvidia-smi-case says "hgx"), cuInit fails with 802,
 *   CUDA_ERROR_SYSTEM_NOT_READY ("system not yet initialized"), until the stand-in fabric
 *   manager has written "Completed" to /run/nvidia-fabricmanager/fabric-state: what users of
 *   NVSwitch hosts without a running fabric manager report. It then reports 8 devices.
 * - Elsewhere cuInit succeeds and reports 1 device.
 *
 * cuDriverGetVersion reports the CUDA version of the driver package it came with
 * (KINDLING_CUDA_VERSION, e.g. 13000 for 13.0, set at build time).
 * KINDLING_FAKE_SMI_CASE_FILE and KINDLING_FAKE_FABRIC_STATE_FILE override the two paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KINDLING_CUDA_VERSION
#define KINDLING_CUDA_VERSION 0
#endif

#define SYSTEM_NOT_READY 802

static const char *path_of(const char *variable, const char *fallback) {
    const char *value = getenv(variable);
    return value && *value ? value : fallback;
}

static int file_starts_with(const char *path, const char *word) {
    char buffer[64] = {0};
    FILE *handle = fopen(path, "r");
    if (!handle) return 0;
    size_t got = fread(buffer, 1, sizeof buffer - 1, handle);
    fclose(handle);
    buffer[got] = '\0';
    return strncmp(buffer, word, strlen(word)) == 0;
}

static int hgx_host(void) {
    return file_starts_with(
        path_of("KINDLING_FAKE_SMI_CASE_FILE", "/etc/kindling-fixture/nvidia-smi-case"), "hgx");
}

static int fabric_completed(void) {
    return file_starts_with(
        path_of("KINDLING_FAKE_FABRIC_STATE_FILE", "/run/nvidia-fabricmanager/fabric-state"),
        "Completed");
}

int cuInit(unsigned int flags) {
    (void)flags;
    return hgx_host() && !fabric_completed() ? SYSTEM_NOT_READY : 0;
}

int cuGetErrorName(int error, const char **name) {
    if (error == 0) { *name = "CUDA_SUCCESS"; return 0; }
    if (error == SYSTEM_NOT_READY) { *name = "CUDA_ERROR_SYSTEM_NOT_READY"; return 0; }
    *name = NULL;
    return 1;
}

int cuGetErrorString(int error, const char **text) {
    if (error == 0) { *text = "no error"; return 0; }
    if (error == SYSTEM_NOT_READY) { *text = "system not yet initialized"; return 0; }
    *text = NULL;
    return 1;
}

int cuDriverGetVersion(int *version) {
    *version = KINDLING_CUDA_VERSION;
    return 0;
}

int cuDeviceGetCount(int *count) {
    *count = hgx_host() ? 8 : 1;
    return 0;
}
