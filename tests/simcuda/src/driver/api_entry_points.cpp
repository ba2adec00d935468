// Driver API: cuGetProcAddress and the error names. These need no cuInit: a statically linked
// runtime finds cuInit itself through cuGetProcAddress.

#include "api_support.h"
#include "driver_errors.h"
#include "proc_address.h"

namespace {

CUresult get_proc_address(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* status) {
  if (pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const simcuda::driver::ProcAddress found =
      simcuda::driver::find_proc_address(symbol, cuda_version, flags);
  *pfn = found.function;
  if (status != nullptr && found.result != CUDA_ERROR_INVALID_VALUE) *status = found.status;
  return found.result;
}

// cuGetErrorName and cuGetErrorString: an unknown code is CUDA_ERROR_INVALID_VALUE with a null
// string, as documented.
CUresult describe(const char* text, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = text;
  return text != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

// CUDA 12.0 and later: the API name cuGetProcAddress maps here.
SIMCUDA_DRIVER_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                                   cuuint64_t flags,
                                                   CUdriverProcAddressQueryResult* symbolStatus) {
  return get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

// CUDA 11.3 to 11.8, without the status.
SIMCUDA_DRIVER_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                                cuuint64_t flags) {
  return get_proc_address(symbol, pfn, cudaVersion, flags, nullptr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuGetErrorName(CUresult error, const char** pStr) {
  return describe(simcuda::driver::result_name(error), pStr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuGetErrorString(CUresult error, const char** pStr) {
  return describe(simcuda::driver::result_description(error), pStr);
}
