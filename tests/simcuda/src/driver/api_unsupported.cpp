// Driver API: modules, kernels, launches, occupancy, the JIT linker and tensor maps, which the
// simulated driver cannot do: nothing runs on the simulated device. They exist because
// libraries import them at load time (PyTorch's libcaffe2_nvrtc.so links these from
// libcuda.so.1), and a library with an undefined symbol does not load. Each checks nothing,
// writes no output and returns CUDA_ERROR_NOT_SUPPORTED, even before cuInit.

#include "api_support.h"

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoad(CUmodule*, const char*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoadData(CUmodule*, const void*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleLoadDataEx(CUmodule*, const void*, unsigned int,
                                                  CUjit_option*, void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleUnload(CUmodule) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuModuleGetFunction(CUfunction*, CUmodule, const char*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncGetAttribute(int*, CUfunction_attribute, CUfunction) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuFuncSetCacheConfig(CUfunction, CUfunc_cache) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuKernelGetAttribute(int*, CUfunction_attribute, CUkernel,
                                                    CUdevice) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                                              unsigned int, unsigned int, unsigned int,
                                              unsigned int, CUstream, void**, void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction, unsigned int, unsigned int,
                                                   unsigned int, unsigned int, unsigned int,
                                                   unsigned int, unsigned int, CUstream, void**,
                                                   void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction, unsigned int, unsigned int,
                                                         unsigned int, unsigned int, unsigned int,
                                                         unsigned int, unsigned int, CUstream,
                                                         void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned int,
                                                              unsigned int, unsigned int,
                                                              unsigned int, unsigned int,
                                                              unsigned int, unsigned int, CUstream,
                                                              void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int*, CUfunction, int,
                                                                           size_t) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLinkCreate_v2(unsigned int, CUjit_option*, void**, CUlinkState*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLinkAddData_v2(CUlinkState, CUjitInputType, void*, size_t,
                                                const char*, unsigned int, CUjit_option*, void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLinkComplete(CUlinkState, void**, size_t*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuTensorMapEncodeTiled(CUtensorMap*, CUtensorMapDataType, cuuint32_t,
                                                      void*, const cuuint64_t*, const cuuint64_t*,
                                                      const cuuint32_t*, const cuuint32_t*,
                                                      CUtensorMapInterleave, CUtensorMapSwizzle,
                                                      CUtensorMapL2promotion,
                                                      CUtensorMapFloatOOBfill) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
