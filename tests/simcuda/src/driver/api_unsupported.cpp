// Driver API that the simulated driver does not have: the JIT linker, tensor maps, graphs and
// a few copies and stream operations. They exist because libraries import them at load time
// (PyTorch's libcaffe2_nvrtc.so links the linker from libcuda.so.1; cuBLASLt and cuDNN resolve
// the rest by name when they start), and a library with an undefined symbol does not load.
// Each checks nothing, writes no output and returns CUDA_ERROR_NOT_SUPPORTED, even before
// cuInit.

#include "api_support.h"

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

// Kernel nodes of a graph: not kept apart from the rest (capture.h), so not readable.
SIMCUDA_DRIVER_EXPORT CUresult cuGraphKernelNodeGetParams(CUgraphNode,
                                                          CUDA_KERNEL_NODE_PARAMS_v1*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec, CUgraphNode,
                                                              const CUDA_KERNEL_NODE_PARAMS_v1*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The linker's older entry points (cuDNN resolves them by name), and its destructor.
SIMCUDA_DRIVER_EXPORT CUresult cuLinkCreate(unsigned int, CUjit_option*, void**, CUlinkState*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLinkAddData(CUlinkState, CUjitInputType, void*, size_t,
                                             const char*, unsigned int, CUjit_option*, void**) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuLinkDestroy(CUlinkState) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Copies and stream memory operations the simulation does not have (cuBLASLt resolves them by
// name when it starts, and uses them in none of the operations PyTorch calls).
SIMCUDA_DRIVER_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D*, CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamBatchMemOp(CUstream, unsigned int, CUstreamBatchMemOpParams*,
                                                  unsigned int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuStreamWaitValue32(CUstream, CUdeviceptr, cuuint32_t,
                                                   unsigned int) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr, size_t, CUdevice, CUstream) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
