/* simcuda's headers and library from C: allocate, copy through device memory, free. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                 \
  do {                                                              \
    cudaError_t error_ = (call);                                    \
    if (error_ != cudaSuccess) {                                    \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorName(error_)); \
      return 1;                                                     \
    }                                                               \
  } while (0)

int main(void) {
  const char message[] = "through the simulated device";
  char back[sizeof message] = {0};
  void* device = NULL;
  void* pinned = NULL;
  struct cudaPitchedPtr pitched;
  struct cudaExtent extent = {64, 2, 2};

  CHECK(cudaMalloc(&device, sizeof message));
  CHECK(cudaMemcpy(device, message, sizeof message, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(back, device, sizeof message, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(device));
  CHECK(cudaMallocManaged(&device, 16, cudaMemAttachGlobal));
  CHECK(cudaFree(device));
  CHECK(cudaHostAlloc(&pinned, 16, cudaHostAllocPortable));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaMalloc3D(&pitched, extent));
  CHECK(cudaFree(pitched.ptr));
  if (strcmp(back, message) != 0 || pitched.pitch != 512) {
    fprintf(stderr, "wrong results\n");
    return 1;
  }
  return 0;
}
