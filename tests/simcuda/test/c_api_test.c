/* simcuda's headers and libraries from C: allocate, copy through device memory, free; and the
 * driver's cuda.h and cudaTypedefs.h, which are plain C too. */
#include <cuda.h>
#include <cudaTypedefs.h>
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

  /* The driver behind the runtime, reached as a C program would. */
  {
    void* function = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    PFN_cuMemGetInfo_v3020 get_info = NULL;
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    if (cuGetProcAddress("cuMemGetInfo", &function, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
                         &status) != CUDA_SUCCESS ||
        status != CU_GET_PROC_ADDRESS_SUCCESS) {
      fprintf(stderr, "cuGetProcAddress failed\n");
      return 1;
    }
    /* ISO C has no cast from void* to a function pointer; POSIX guarantees the bits match. */
    memcpy(&get_info, &function, sizeof get_info);
    if (get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS || free_bytes != total_bytes) {
      fprintf(stderr, "cuMemGetInfo: %zu of %zu free\n", free_bytes, total_bytes);
      return 1;
    }
  }
  return 0;
}
