// A library linked to the CUDA runtime, as a Python extension is: programs/dlclose_driver.cpp
// loads it with dlopen(RTLD_LOCAL), allocates through it, and unloads it with its runtime.
#include <cuda_runtime_api.h>

extern "C" __attribute__((visibility("default"))) cudaError_t user_cuda_malloc(void** p,
                                                                               size_t size) {
  return cudaMalloc(p, size);
}

extern "C" __attribute__((visibility("default"))) cudaError_t user_cuda_free(void* p) {
  return cudaFree(p);
}
