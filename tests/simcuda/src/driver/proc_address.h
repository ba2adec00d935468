// cuGetProcAddress's search: from an API name, a CUDA version and the stream flags to the
// exported function that implements that ABI (entry_points.inc).
#pragma once

#include "cuda.h"

namespace simcuda::driver {

struct ProcAddress {
  CUresult result;  // CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND or CUDA_ERROR_INVALID_VALUE
  CUdriverProcAddressQueryResult status;
  void* function;  // nullptr unless found
};

// `symbol` is the API name ("cuMemAlloc", never "cuMemAlloc_v2"); `cuda_version` is
// 1000 * major + 10 * minor. A version above the driver's is CUDA_ERROR_INVALID_VALUE, as
// documented; an unknown name is CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
// and a known one that is newer than `cuda_version` is CUDA_ERROR_NOT_FOUND with
// CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT.
ProcAddress find_proc_address(const char* symbol, int cuda_version, cuuint64_t flags);

}  // namespace simcuda::driver
