// A library the program late_loader.cpp loads only after it has allocated: its frames are the
// first the shim meets in an object loaded since it last asked the loader.
#include <cuda_runtime_api.h>

// Not a tail call: the library's own frame stays on the stack under cudaMalloc's.
extern "C" __attribute__((visibility("default"), noinline)) int late_library_alloc(void** p,
                                                                                   size_t size) {
  const cudaError_t result = cudaMalloc(p, size);
  return result == cudaSuccess ? 0 : 1;
}
