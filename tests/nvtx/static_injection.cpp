// NVTX's static injection (load sequence 2, nvtx3/nvtxDetail/nvtxInit.h): a strong definition
// of InitializeInjectionNvtx2_fnptr replaces the NVTX headers' weak null one, and NVTX's own
// loader then calls the shim's entry point, in this process, with its real export table.
#include "nvtx_injection.h"

extern "C" {
vramtrace::nvtx::InitializeInjectionFunc InitializeInjectionNvtx2_fnptr = &InitializeInjectionNvtx2;
}
