// Driver API: streams. Streams are handles only, since no work is ever deferred: 0,
// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name the current context's implicit streams, created
// streams are valid until destroyed or until their context is reset, and anything else is
// CUDA_ERROR_INVALID_HANDLE.

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::in_context;

namespace {

CUresult synchronize(CUstream stream) {
  return in_context([&](Driver& driver, int) { return driver.check_stream(stream); });
}

CUresult destroy(CUstream stream) {
  return in_context([&](Driver& driver, int) { return driver.destroy_stream(stream); });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  return in_context([&](Driver& driver, int device) {
    if (phStream == nullptr || (Flags & ~CU_STREAM_NON_BLOCKING) != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    return driver.create_stream(device, Flags, phStream);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamSynchronize(CUstream hStream) {
  return synchronize(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return synchronize(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamDestroy_v2(CUstream hStream) {
  return destroy(hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamDestroy(CUstream hStream) {
  return destroy(hStream);
}
