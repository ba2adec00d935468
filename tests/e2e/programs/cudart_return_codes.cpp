// Prints the return code of each allocation-family call, and the sticky error after it, so
// that a test can compare a run with the shim against one without: the shim must not change
// a single value. Built against the real CUDA toolkit and its libcudart where installed (with
// no driver, every call fails, and those failures must pass through unchanged), and against
// the simulated one everywhere.
#include <cuda_runtime.h>

#include <cstdio>

#define SHOW(call)                                                          \
  do {                                                                      \
    cudaError_t r = (call);                                                 \
    cudaError_t sticky = cudaGetLastError();                                \
    std::printf("%-40s -> %d, last error %d\n", #call, static_cast<int>(r), \
                static_cast<int>(sticky));                                  \
  } while (0)

int main() {
  void* p = nullptr;
  void* h = nullptr;
  size_t pitch = 0;
  cudaPitchedPtr pitched{};
  cudaStream_t stream = nullptr;
  SHOW(cudaMalloc(&p, 1 << 20));
  SHOW(cudaFree(p));
  SHOW(cudaFree(reinterpret_cast<void*>(0x1234)));
  SHOW(cudaMalloc(&p, size_t{1} << 50));
  SHOW(cudaMallocManaged(&p, 4096, cudaMemAttachGlobal));
  SHOW(cudaFree(p));
  SHOW(cudaMallocHost(&h, 4096));
  SHOW(cudaFreeHost(h));
  SHOW(cudaHostAlloc(&h, 4096, cudaHostAllocDefault));
  SHOW(cudaFreeHost(h));
  SHOW(cudaMallocPitch(&p, &pitch, 1000, 10));
  SHOW(cudaFree(p));
  SHOW(cudaMalloc3D(&pitched, make_cudaExtent(100, 10, 10)));
  SHOW(cudaFree(pitched.ptr));
  SHOW(cudaMallocAsync(&p, 4096, stream));
  SHOW(cudaFreeAsync(p, stream));
  SHOW(cudaMalloc(nullptr, 16));
  return 0;
}
