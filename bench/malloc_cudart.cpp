// A stand-in CUDA runtime for bench/vs-heaptrack.sh's storm: cudaMalloc is malloc and cudaFree
// is free, nothing else. heaptrack records the malloc, vramtrace the cudaMalloc: each tool
// then pays for exactly one event per call, at the same stack depth, in the same program.
// Built as libcudart.so.13 in its own folder, so that only the storm workload loads it.
#include <cuda_runtime_api.h>

#include <cstdlib>

extern "C" {

__attribute__((visibility("default"))) cudaError_t cudaMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  *ptr = std::malloc(size);
  return *ptr != nullptr ? cudaSuccess : cudaErrorMemoryAllocation;
}

__attribute__((visibility("default"))) cudaError_t cudaFree(void* ptr) {
  std::free(ptr);
  return cudaSuccess;
}

__attribute__((visibility("default"))) cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return cudaErrorInvalidValue;
  *device = 0;
  return cudaSuccess;
}

}  // extern "C"
