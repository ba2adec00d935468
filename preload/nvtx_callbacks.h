// The shim's implementation of NVTX's core calls (marks, ranges, domains, registered
// strings), written into the function tables of an NVTX instance. Each library or program
// built with the NVTX 3 headers is one instance, with its own tables; each attaches once.
#pragma once

#include "nvtx_abi.h"

namespace vramtrace::preload {

// Fills the CORE and CORE2 tables of the NVTX instance that hands out `get_export_table`.
// Returns 1 on success. Returns 0, so that NVTX makes every call a no-op, when the export
// table is unusable or when this process will never record (no collector, or recording
// stopped): then the program runs exactly as without a tool.
int attach_nvtx_callbacks(nvtx::GetExportTableFunc get_export_table);

}  // namespace vramtrace::preload
