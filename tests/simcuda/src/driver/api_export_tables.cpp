// Driver API: cuGetExportTable (export_tables.h). Needs no cuInit: the runtime asks before it.

#include "api_support.h"
#include "export_tables.h"

SIMCUDA_DRIVER_EXPORT CUresult cuGetExportTable(const void** ppExportTable,
                                                const CUuuid* pExportTableId) {
  if (ppExportTable == nullptr || pExportTableId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *ppExportTable = simcuda::driver::export_table(*pExportTableId);
  return *ppExportTable != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
