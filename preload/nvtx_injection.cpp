#include "nvtx_injection.h"

#include "nvtx_callbacks.h"

extern "C" int InitializeInjectionNvtx2(vramtrace::nvtx::GetExportTableFunc get_export_table) {
  return vramtrace::preload::attach_nvtx_callbacks(get_export_table);
}
