// The shim as an NVTX injection library. `vramtrace run` sets NVTX_INJECTION64_PATH to the
// shim's own path; at a program's first NVTX call, NVTX's loader dlopens that path (the
// shim is already loaded, so it gets the same object) and calls this function.
#pragma once

#include "nvtx_abi.h"

extern "C" {
// NVTX's entry point for tools: returns 1 when the shim took the NVTX instance's calls,
// 0 when NVTX should make them no-ops (see attach_nvtx_callbacks).
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    vramtrace::nvtx::GetExportTableFunc get_export_table);
}
